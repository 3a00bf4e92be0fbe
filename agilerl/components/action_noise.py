"""Exploration noise for deterministic continuous-action policies (DDPG, TD3).

The noise is drawn in *normalised* action units, where every action dimension spans
[-1, 1]; the agent scales it by half the width of the action bounds before adding it to
the actor's action, so one ``expl_noise`` means the same share of the range on every
dimension and in every environment.

Two processes, one state row per sub-environment:

* :class:`GaussianNoise`: independent ``mean + sigma * N(0, 1)`` at every step.
* :class:`OrnsteinUhlenbeckNoise`: the Euler step of ``dx = theta (mean - x) dt +
  sigma dW``, i.e. ``x <- x + theta (mean - x) dt + sigma sqrt(dt) N(0, 1)``: temporally
  correlated noise (lag-1 autocorrelation ``1 - theta dt``) whose stationary variance is
  ``sigma^2 / (theta (2 - theta dt))``. Its state starts at 0 and returns to 0 in a
  sub-environment whose episode ended (:meth:`ActionNoise.reset`).

How many rows: one per sub-environment of the batch being acted in. ``vect_noise_dim``
(the spec's field) only sizes the state before the first batch is seen; a batch of
another size (the vector env has ``num_envs`` sub-environments) re-allocates the state at
that size, every row at its start. So AgileRL manifests, which leave ``vect_noise_dim``
at 1 with 16 environments, get independent noise per environment rather than one draw
broadcast to all.

Random numbers come from the generator the caller passes (the agent's seeded ``rng``),
so a seeded run draws the same noise, and a checkpoint of the state (:meth:`state_dict`)
plus the agent's generator continues it exactly.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from agilerl.files import checkpoints


class ActionNoise:
    """Per-environment noise state of ``action_dim`` normalised units per row."""

    #: Name saved with the state, so a checkpoint of the other process is refused.
    kind: ClassVar[str] = ""

    def __init__(self, action_dim: int, num_envs: int = 1, mean: float = 0.0, sigma: float = 0.1):
        if sigma < 0:
            raise ValueError(f"expl_noise must be non-negative, got {sigma!r}")
        if isinstance(num_envs, bool) or int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"vect_noise_dim must be a positive integer, got {num_envs!r}")
        self.action_dim = int(action_dim)
        self.mean = float(mean)
        self.sigma = float(sigma)
        self.state = np.zeros((int(num_envs), self.action_dim))

    @property
    def num_envs(self) -> int:
        return self.state.shape[0]

    def sample(self, rng: np.random.Generator, num_envs: int) -> np.ndarray:
        """The next noise, ``(num_envs, action_dim)`` (the state resized to ``num_envs``
        rows first, all at their start, if it had another size)."""
        if num_envs != self.num_envs:
            self.state = np.zeros((int(num_envs), self.action_dim))
        return self._step(rng)

    def _step(self, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def reset(self, ended: npt.ArrayLike | None = None) -> None:
        """Restart the rows of the sub-environments marked in ``ended`` (every row when
        None). A mask of another length than the state resizes it (all rows restart)."""
        if ended is None:
            self.state[:] = 0.0
            return
        ended = np.asarray(ended, dtype=bool).reshape(-1)
        if ended.shape[0] != self.num_envs:
            self.state = np.zeros((ended.shape[0], self.action_dim))
        else:
            self.state[ended] = 0.0

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "state": self.state.copy()}

    def load_state_dict(self, saved: Any, where: str) -> None:
        """Restore :meth:`state_dict` output, checked first (errors name ``where``)."""
        checkpoints.require(saved, {"kind": str, "state": np.ndarray}, where)
        if saved["kind"] != self.kind:
            raise checkpoints.fail(
                checkpoints.join(where, "kind"), f"{saved['kind']!r} noise, expected {self.kind!r}"
            )
        state = saved["state"]
        if state.ndim != 2 or state.shape[1] != self.action_dim or state.shape[0] < 1:
            raise checkpoints.fail(
                checkpoints.join(where, "state"),
                f"shape {state.shape}, expected (num_envs, {self.action_dim})",
            )
        if not np.all(np.isfinite(state)):
            raise checkpoints.fail(checkpoints.join(where, "state"), "holds nan or inf")
        self.state = state.astype(np.float64, copy=True)


class GaussianNoise(ActionNoise):
    """Independent ``mean + sigma * N(0, 1)`` per step (the state holds the last draw)."""

    kind = "gaussian"

    def _step(self, rng: np.random.Generator) -> np.ndarray:
        self.state = self.mean + self.sigma * rng.standard_normal(self.state.shape)
        return self.state.copy()


class OrnsteinUhlenbeckNoise(ActionNoise):
    """Mean-reverting ``x <- x + theta (mean - x) dt + sigma sqrt(dt) N(0, 1)``."""

    kind = "ornstein_uhlenbeck"

    def __init__(
        self,
        action_dim: int,
        num_envs: int = 1,
        mean: float = 0.0,
        sigma: float = 0.1,
        theta: float = 0.15,
        dt: float = 0.01,
    ):
        super().__init__(action_dim, num_envs, mean, sigma)
        if theta < 0:
            raise ValueError(f"theta must be non-negative, got {theta!r}")
        if not dt > 0:
            raise ValueError(f"dt must be positive, got {dt!r}")
        self.theta = float(theta)
        self.dt = float(dt)

    def _step(self, rng: np.random.Generator) -> np.ndarray:
        shock = self.sigma * np.sqrt(self.dt) * rng.standard_normal(self.state.shape)
        self.state = self.state + self.theta * (self.mean - self.state) * self.dt + shock
        return self.state.copy()


def smoothing_noise(
    rng: np.random.Generator, shape: tuple[int, ...], std: float, clip: float
) -> np.ndarray:
    """Target policy smoothing (TD3's, MATD3's): Gaussian noise of ``std`` and ``shape``
    from ``rng``, clipped to ``[-clip, clip]`` (normalised action units)."""
    return np.clip(rng.standard_normal(shape) * std, -clip, clip)
