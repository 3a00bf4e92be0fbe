"""``NStepReplayBuffer``: replay of n-step returns from a vectorised environment.

The training loop adds one transition per sub-environment per vector step (same-step
autoreset: ``next_obs`` of an episode that ended is its true final observation, as
``off_policy.with_final_obs`` makes it), with ``done`` = *terminated* and, separately,
``truncated``. The buffer keeps the last ``n_step`` vector steps; once it holds that many,
each :meth:`NStepReplayBuffer.add` turns the oldest one, per sub-environment, into an
n-step transition and stores it::

    reward   = r_t + gamma r_{t+1} + ... + gamma^(k-1) r_{t+k-1}
    next_obs = next_obs_{t+k-1},  done = terminated_{t+k-1},  discount = gamma^k

where ``k <= n_step`` stops early at the first step of that sub-environment's episode
that terminated or was truncated: nothing after an episode's end is summed into it. A
learner's target is ``reward + discount * (1 - done) * V(next_obs)``: after a
termination nothing is bootstrapped; after a truncation (``done`` false) the bootstrap
uses the truncated episode's last observation, discounted by the ``gamma^k`` of the
shortened return (hence the ``discount`` field: ``gamma^n_step`` would be wrong there).

**With a prioritised buffer (Rainbow).** :meth:`NStepReplayBuffer.add` returns the
1-step transitions of the vector step it just matured (``None`` while it fills up),
to be added to the prioritised buffer. Both buffers then receive the same rows in the
same order, so with the same ``max_size`` slot ``i`` of one holds the 1-step and slot
``i`` of the other the n-step transition of the same (obs, action)::

    one_step = n_step_memory.add(obs, action, reward, next_obs, terminated, truncated)
    if one_step is not None:
        memory.add(**one_step)
    batch = memory.sample(batch_size, beta)             # PrioritizedReplayBuffer
    n_batch = n_step_memory.sample_from_indices(batch["indices"])

Before the loop resets the environment in mid-episode (a new agent's turn, the end of
a generation), :meth:`NStepReplayBuffer.flush` stores what is pending as if every
episode were truncated there, and returns its 1-step transitions the same way.
``gamma`` is the algorithm's; ``n_step = 1`` stores the 1-step transitions themselves
(with ``discount = gamma``).

**Turns** (experience sharing) are the replay buffer's, over the stored n-step
transitions; a turn begins and ends with nothing pending (the loop flushes before a turn
ends), so the pending steps never mix two agents' episodes and never need undoing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from agilerl.components.observations import map_tree, tree_leaves
from agilerl.components.replay_buffer import (
    FIELDS,
    STATE_LAYOUT,
    ReplayBuffer,
    _as_tensor,
    _check_leaves,
)
from agilerl.files import checkpoints

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.models import ReplayBufferSpec
    from agilerl.networks.base import Observation
    from agilerl.networks.distributions import TensorLike

#: Fields of a pending (1-step) transition: a replay transition plus ``truncated``.
STEP_FIELDS = (*FIELDS, "truncated")


def _where(mask: torch.Tensor, new: Any, old: Any) -> Any:
    """Per row (sub-environment), ``new`` where ``mask`` else ``old``, leaf by leaf."""

    def pick(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.where(mask.view(-1, *([1] * (a.dim() - 1))), a, b)

    return map_tree(pick, new, old)


def _concat(trees: list[Any]) -> Any:
    """Rows of ``trees`` (all of one structure) stacked along the batch dimension."""
    return map_tree(lambda *leaves: torch.cat(leaves), *trees)


class NStepWindow:
    """The last ``n_step`` vector steps of a vectorised environment, turned into n-step
    transitions as they mature (see the module docstring): what an
    :class:`NStepReplayBuffer` holds back, and what a cohort's lockstep replay runs over
    the joined rows of its agents' environments (every row is its own sub-environment)."""

    def __init__(self, n_step: int, gamma: float) -> None:
        self.n_step = int(n_step)
        self.gamma = float(gamma)
        # The vector steps not yet stored, oldest first (each a dict of STEP_FIELDS).
        self.pending: deque[dict[str, Any]] = deque()

    def add(self, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Take one vector step (a mapping of :data:`STEP_FIELDS`). Once ``n_step`` steps
        are held, returns the n-step transitions of the oldest and its 1-step ones (keyed
        by :data:`FIELDS`) and forgets it; else ``None``."""
        envs = self.pending[0]["done"].shape[0] if self.pending else None
        self.pending.append(self.step(values, envs))
        if len(self.pending) < self.n_step:
            return None
        matured = self.n_step_rows(list(self.pending))
        return matured, self.one_step(self.pending.popleft())

    def flush(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every pending step as if all episodes were truncated after the newest, oldest
        first: its n-step and 1-step transitions, as :meth:`add` returns them."""
        steps = list(self.pending)
        self.pending.clear()
        return [(self.n_step_rows(steps[i:]), self.one_step(steps[i])) for i in range(len(steps))]

    @staticmethod
    def step(values: Mapping[str, Any], envs: int | None) -> dict[str, Any]:
        """One vector step as tensors of its own (flags as bool, rewards as floats: the
        caller may reuse its arrays while the step is pending), checked: every field has
        one row per environment (``envs`` of them, unless None)."""

        def own(leaf: Any) -> torch.Tensor:
            return _as_tensor(leaf).clone()

        step = {name: map_tree(own, values[name]) for name in STEP_FIELDS}
        sizes = {leaf.shape[0] for name in STEP_FIELDS for leaf in tree_leaves(step[name])}
        if len(sizes) != 1:
            raise ValueError(f"every field of a batch needs the same length, got {sorted(sizes)}")
        for name in ("done", "truncated"):
            if step[name].dim() != 1:
                raise ValueError(f"{name} must hold one flag per environment (a 1-D array)")
            step[name] = step[name].bool()
        if step["reward"].dim() != 1:
            raise ValueError("reward must hold one number per environment (a 1-D array)")
        if not step["reward"].is_floating_point():
            step["reward"] = step["reward"].double()
        now = sizes.pop()
        if envs is not None and now != envs:
            raise ValueError(f"a batch of {now} environments after batches of {envs}")
        return step

    def n_step_rows(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        """The n-step transitions of ``steps[0]`` over ``steps`` (the window ends at the
        last of them in any case), computed backwards for every sub-environment at once."""
        last = steps[-1]
        reward = last["reward"].clone()
        next_obs, done = last["next_obs"], last["done"]
        k = torch.ones_like(reward, dtype=torch.int64)
        for step in reversed(steps[:-1]):
            ended = step["done"] | step["truncated"]  # the sum stops at this step
            reward = torch.where(ended, step["reward"], step["reward"] + self.gamma * reward)
            next_obs = _where(ended, step["next_obs"], next_obs)
            done = torch.where(ended, step["done"], done)
            k = torch.where(ended, torch.ones_like(k), k + 1)
        first = steps[0]
        return {
            "obs": first["obs"],
            "action": first["action"],
            "reward": reward,
            "next_obs": next_obs,
            "done": done,
            "discount": (self.gamma ** k.double()).float(),
        }

    @staticmethod
    def one_step(step: dict[str, Any]) -> dict[str, Any]:
        return {name: step[name] for name in FIELDS}


class NStepReplayBuffer(ReplayBuffer):
    """Stores n-step transitions computed per sub-environment (see module docstring)."""

    fields = (*FIELDS, "discount")

    def __init__(
        self,
        max_size: int,
        n_step: int = 3,
        gamma: float = 0.99,
        device: str | torch.device = "cpu",
    ) -> None:
        super().__init__(max_size, device=device)
        if isinstance(n_step, bool) or int(n_step) != n_step or n_step < 1:
            raise ValueError(f"n_step must be a positive integer, got {n_step!r}")
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not 0 <= gamma <= 1:
            raise ValueError(f"gamma must be a number in [0, 1], got {gamma!r}")
        self.n_step = int(n_step)
        self.gamma = float(gamma)
        self._window = NStepWindow(self.n_step, self.gamma)
        self._pending = self._window.pending  # the steps not yet stored

    @classmethod
    def from_spec(
        cls, spec: ReplayBufferSpec, gamma: float, device: str | torch.device = "cpu"
    ) -> NStepReplayBuffer:
        """The buffer a :class:`~agilerl.models.ReplayBufferSpec` describes, for an
        algorithm discounting by ``gamma``."""
        return cls(spec.max_size, n_step=spec.n_step_buffer_args.n_step, gamma=gamma, device=device)

    @property
    def pending(self) -> int:
        """Vector steps added but not yet stored."""
        return len(self._pending)

    def clear(self) -> None:
        super().clear()
        self._pending.clear()

    # Extends ReplayBuffer.add: `truncated`, and returns the matured 1-step rows (for the
    # buffer filled in step with this one), hence the different return type.
    def add(  # pyright: ignore[reportIncompatibleMethodOverride]
        self,
        obs: Observation,
        action: TensorLike,
        reward: TensorLike,
        next_obs: Observation,
        done: TensorLike,
        truncated: TensorLike | None = None,
    ) -> dict[str, Any] | None:
        """Take one vector step (``done`` = terminated; ``truncated`` None: no time limit
        cut). Once ``n_step`` steps are held, stores the n-step transitions of the oldest
        and returns its 1-step transitions (keyed by :data:`FIELDS`); else ``None``."""
        if truncated is None:
            truncated = torch.zeros(_as_tensor(done).shape, dtype=torch.bool)
        values = (obs, action, reward, next_obs, done, truncated)
        matured = self._window.add(dict(zip(STEP_FIELDS, values, strict=True)))
        if matured is None:
            return None
        self.store(matured[0])
        return matured[1]

    def flush(self) -> dict[str, Any] | None:
        """Store every pending step as if all episodes were truncated after the newest
        (call it before resetting the environment mid-episode); returns their 1-step
        transitions, oldest first, as :meth:`add` does; ``None`` if nothing was pending."""
        matured = self._window.flush()
        if not matured:
            return None
        self.store(_concat([n_step for n_step, _ in matured]))
        return _concat([one_step for _, one_step in matured])

    def begin_turn(self) -> None:
        self._refuse_pending("begin_turn")
        super().begin_turn()

    def check_turn_end(self) -> None:
        super().check_turn_end()
        self._refuse_pending("end_turn")

    def _refuse_pending(self, what: str) -> None:
        if self._pending:
            raise RuntimeError(
                f"NStepReplayBuffer.{what}: {len(self._pending)} steps are pending; a turn "
                "starts and ends with none (flush() first, as Replay.end_turn does)"
            )

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The stored n-step transitions (``buffer``), ``n_step``, ``gamma`` and the
        pending steps (CPU tensors), so a resumed run continues the same windows."""
        return {
            "buffer": super().state_dict(),
            "n_step": self.n_step,
            "gamma": self.gamma,
            "pending": [
                {name: map_tree(lambda t: t.cpu().clone(), step[name]) for name in STEP_FIELDS}
                for step in self._pending
            ],
        }

    def load_state_dict(self, state: Mapping[str, Any], where: str = "n_step_memory") -> None:
        """Restore what :meth:`state_dict` saved, checked first (errors name the key path
        under ``where``); a refused state leaves the buffer as it was."""
        checkpoints.require(state, N_STEP_STATE_LAYOUT, where)
        for key, mine in (("n_step", self.n_step), ("gamma", self.gamma)):
            if state[key] != mine:
                raise checkpoints.fail(
                    checkpoints.join(where, key),
                    f"the saved buffer was filled with {key} {state[key]}, this one uses {mine}",
                )
        pending, at = state["pending"], checkpoints.join(where, "pending")
        if len(pending) >= self.n_step:
            raise checkpoints.fail(
                at, f"{len(pending)} steps pending, fewer than {self.n_step} expected"
            )
        steps: list[dict[str, Any]] = []
        for i, saved in enumerate(pending):
            step_at = checkpoints.join(at, i)
            checkpoints.require_keys(saved, STEP_FIELDS, step_at, "a step field")
            done = checkpoints.join(step_at, "done")
            if not torch.is_tensor(saved["done"]) or saved["done"].dim() != 1:
                raise checkpoints.fail(done, "expected a 1-D tensor (one flag per environment)")
            envs = steps[0]["done"].shape[0] if steps else saved["done"].shape[0]
            for name in STEP_FIELDS:
                _check_leaves(saved[name], checkpoints.join(step_at, name), envs)
            try:
                steps.append(NStepWindow.step(saved, envs))
            except ValueError as err:
                raise checkpoints.fail(step_at, str(err)) from None
        super().load_state_dict(state["buffer"], checkpoints.join(where, "buffer"))
        self._pending.extend(steps)


#: An n-step buffer's checkpoint state (:meth:`NStepReplayBuffer.state_dict`).
N_STEP_STATE_LAYOUT = {
    "buffer": STATE_LAYOUT,
    "n_step": int,
    "gamma": float,
    "pending": checkpoints.ListOf(dict),
}
