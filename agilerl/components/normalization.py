"""An agent's running normalisation of observations and rewards (``normalize`` of its
spec, :class:`~agilerl.models.algorithms.NormalizationConfig`), as Stable-Baselines3's
``VecNormalize`` does it for PPO on MuJoCo, but held by the agent: saved with it, kept by
its clones, applied wherever it acts (``predict``, evaluation, dataset collection).

* **Observations**: ``(obs - mean) / sqrt(var + epsilon)``, clipped to
  ``+-clip_observation``, with the mean and variance of every observation the agent has
  collected in training (a vector Box observation space).
* **Rewards learnt from**: divided by the running standard deviation of the discounted
  return ``R <- gamma R + r`` (per environment, restarted where an episode ends), clipped
  to ``+-clip_reward``. Only what the agent learns from is scaled: episode returns,
  fitness and training scores stay in the environment's units.

**When the statistics move.** They are frozen while the agent collects a rollout and
learns from it, and take in that rollout's observations and returns after the update
(:meth:`Normalization.absorb`). So every observation of a rollout is normalised the same
way when the agent acted on it and when it learns from it (the first epoch's probability
ratios start at exactly 1), at the cost of a one-rollout lag: the first rollout of a run
is normalised by the initial statistics (mean 0, variance 1). Evaluation and ``predict``
never update them.

The mean and variance of a batch are merged into the running ones with Chan et al.'s
parallel formula, in float64; the count starts at ``1e-4`` (so the first batch dominates
at once, as in Stable-Baselines3).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agilerl.files import checkpoints

if TYPE_CHECKING:
    # Type checkers read the generated classes from the tree (see agilerl.models.networks).
    from generated.ppo_schema import NormalizationConfig

#: The count the running statistics start from (weight of the initial mean 0, variance 1).
INITIAL_COUNT = 1e-4


class RunningMeanStd:
    """Mean and variance of every row seen, ``shape`` per row, merged batch by batch."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros(shape)
        self.var = np.ones(shape)
        self.count = INITIAL_COUNT

    def update(self, rows: np.ndarray) -> None:
        """Take in ``rows`` ``(n, *shape)``."""
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, *self.mean.shape)
        if not len(rows):
            return
        n = rows.shape[0]
        delta = rows.mean(axis=0) - self.mean
        total = self.count + n
        squares = self.var * self.count + rows.var(axis=0) * n + delta**2 * self.count * n / total
        # np.asarray: a 0-d statistic stays an array (numpy returns scalars for those).
        self.mean = np.asarray(self.mean + delta * n / total)
        self.var = np.asarray(squares / total)
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        return {
            "mean": torch.from_numpy(self.mean.copy()),
            "var": torch.from_numpy(self.var.copy()),
            "count": float(self.count),
        }

    def load_state_dict(self, state: Any, where: str) -> None:
        checkpoints.require(state, RMS_LAYOUT, where)
        shape = tuple(self.mean.shape)
        mean = checkpoints.require_tensor(
            state["mean"], checkpoints.join(where, "mean"), shape, torch.float64
        )
        var = checkpoints.require_tensor(
            state["var"], checkpoints.join(where, "var"), shape, torch.float64
        )
        if not torch.isfinite(mean).all() or not (torch.isfinite(var).all() and (var >= 0).all()):
            raise checkpoints.fail(where, "mean and var must be finite, var >= 0")
        if not math.isfinite(state["count"]) or state["count"] <= 0:
            raise checkpoints.fail(checkpoints.join(where, "count"), "must be finite and > 0")
        self.mean, self.var = mean.numpy().copy(), var.numpy().copy()
        self.count = float(state["count"])


RMS_LAYOUT = {"mean": object, "var": object, "count": float}


class Normalization:
    """What an agent normalises and its running statistics (see the module docstring).

    ``config`` is the spec's :class:`~agilerl.models.algorithms.NormalizationConfig`;
    ``features`` the size of a preprocessed observation (None when observations are not
    normalised)."""

    def __init__(self, config: NormalizationConfig, features: int | None) -> None:
        self.config = config
        self.observations: RunningMeanStd | None = (
            RunningMeanStd((features,)) if config.observation and features is not None else None
        )
        self.returns: RunningMeanStd | None = RunningMeanStd() if config.reward else None
        self._discounted: np.ndarray | None = None  # R per environment, episodes in flight
        self._seen_obs: list[np.ndarray] = []  # since the last absorb
        self._seen_returns: list[np.ndarray] = []
        self._frozen: tuple[torch.Tensor, torch.Tensor] | None = None  # mean, std as tensors

    # -- applied (frozen statistics) ------------------------------------------------------
    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """Preprocessed observations ``(batch, features)``, normalised and clipped."""
        if self.observations is None:
            return x
        if self._frozen is None or self._frozen[0].device != x.device:
            stats = self.observations
            std = np.sqrt(stats.var + self.config.epsilon)
            self._frozen = (
                torch.as_tensor(stats.mean, dtype=x.dtype, device=x.device),
                torch.as_tensor(std, dtype=x.dtype, device=x.device),
            )
        mean, std = self._frozen
        bound = self.config.clip_observation
        return ((x - mean) / std).clamp(-bound, bound)

    def scale_rewards(self, reward: np.ndarray, done: np.ndarray, gamma: float) -> np.ndarray:
        """The rewards to learn from for one vector step (float32): divided by the
        running standard deviation of the discounted return and clipped; the step's
        returns are kept for :meth:`absorb` and restart where ``done``."""
        if self.returns is None:
            return reward
        reward = np.asarray(reward, dtype=np.float64)
        if self._discounted is None or self._discounted.shape != reward.shape:
            self._discounted = np.zeros_like(reward)
        self._discounted = self._discounted * gamma + reward
        self._seen_returns.append(self._discounted.copy())
        self._discounted[np.asarray(done, dtype=bool)] = 0.0
        scale = math.sqrt(float(self.returns.var) + self.config.epsilon)
        bound = self.config.clip_reward
        return np.clip(reward / scale, -bound, bound).astype(np.float32)

    # -- statistics -----------------------------------------------------------------------
    def observe(self, x: torch.Tensor) -> None:
        """Preprocessed training observations ``(batch, features)``, taken in at the next
        :meth:`absorb`."""
        if self.observations is not None:
            self._seen_obs.append(x.detach().to("cpu", torch.float64).numpy())

    def absorb(self) -> None:
        """Take in everything observed since the last call (after a rollout's update)."""
        if self.observations is not None and self._seen_obs:
            self.observations.update(np.concatenate(self._seen_obs))
            self._frozen = None
        if self.returns is not None and self._seen_returns:
            self.returns.update(np.concatenate(self._seen_returns))
        self._seen_obs.clear()
        self._seen_returns.clear()

    def restart_episodes(self) -> None:
        """The environment was reset: every discounted return starts from zero."""
        self._discounted = None

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The statistics (taken in; nothing is pending between rollouts)."""
        return {
            "observation": None if self.observations is None else self.observations.state_dict(),
            "reward": None if self.returns is None else self.returns.state_dict(),
        }

    def load_state_dict(self, state: Any, where: str) -> None:
        checkpoints.require_keys(state, ("observation", "reward"), where, "a statistics entry")
        for key, stats in (("observation", self.observations), ("reward", self.returns)):
            at = checkpoints.join(where, key)
            if (state[key] is None) != (stats is None):
                raise checkpoints.fail(
                    at, "the saved agent and its normalize settings disagree on this entry"
                )
            if stats is not None:
                stats.load_state_dict(state[key], at)
        self._frozen = None
