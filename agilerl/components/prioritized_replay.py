"""``PrioritizedReplayBuffer``: proportional prioritised experience replay (Schaul et al.).

It is a :class:`~agilerl.components.replay_buffer.ReplayBuffer` (same storage, same
``add``, observations nested as added) plus one priority per slot:

* slot ``i`` is drawn with probability ``P(i) = p_i**alpha / sum_j p_j**alpha``
  (``alpha`` from ``replay_buffer.per_buffer_args.alpha``; 0 is uniform). The values
  ``p**alpha`` live in a :class:`~agilerl.components.sum_tree.SumTree`; a batch of ``B``
  is drawn *stratified*: one prefix sum uniform in each of ``B`` equal slices of the
  total, as the reference does, all walked down the tree at once;
* a new transition gets the largest priority seen so far (1.0 before any update), so it
  is replayed at least once soon;
* :meth:`PrioritizedReplayBuffer.sample` returns, beside the fields, ``weights``: the
  importance-sampling correction ``(N * P(i))**-beta`` divided by its largest possible
  value (that of the smallest priority), so weights lie in ``(0, 1]``; and ``indices``,
  the slots drawn, which go back with the new priorities to
  :meth:`PrioritizedReplayBuffer.update_priorities` (priority ``|error| + prior_eps``:
  the epsilon keeps every transition drawable). ``beta`` is the caller's: Rainbow
  anneals it to 1 over the run.

**Turns** (experience sharing; the rows' side is the replay buffer's). A turn also
remembers the max priority it began with and, the first time it changes a slot's
priority, the old one, so :meth:`~ReplayBuffer.end_turn` puts priorities, sum tree and
max priority back exactly (a slot empty before the turn becomes unused again in the
tree). Its journal adds the priorities it gave to rows that were there before it (the
last one per row; updates of rows the turn stored itself are left out: those rows enter
at the max priority when merged, as every new row does) and the max priority it reached.
:meth:`PrioritizedReplayBuffer.merge` raises the max priority to the largest of the
journals', applies every journal's old-row priorities in journal order (a later
journal's wins on a row two touched), then stores the rows.

Priorities, the largest one and ``alpha`` are part of :meth:`state_dict`, so a resumed
run samples with the same priorities. Randomness comes from the global torch CPU
generator, as in :class:`~agilerl.components.replay_buffer.ReplayBuffer`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agilerl.components.replay_buffer import STATE_LAYOUT, ReplayBuffer, Turn
from agilerl.components.sum_tree import SumTree, last_occurrence
from agilerl.files import checkpoints

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.models import ReplayBufferSpec
    from agilerl.networks.distributions import TensorLike

#: Default ``alpha``: the ``replay_buffer.per_buffer_args.alpha`` default of the schema
#: (a test keeps them equal).
ALPHA = 0.5
#: Default ``beta`` at the start of a run (the reference Rainbow DQN's).
BETA = 0.4
#: Default ``prior_eps`` added to every new priority (the reference Rainbow DQN's).
PRIOR_EPS = 1e-6


def _numpy(value: TensorLike) -> np.ndarray:
    """A CPU numpy view of an array-like (tensors on any device are copied to the CPU)."""
    if torch.is_tensor(value):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _check_unit(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def stratified_draw(
    tree: SumTree, count: int, beta: float, generator: torch.Generator | None
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` slots of ``tree`` (of ``priority**alpha``) drawn stratified, one uniform
    prefix sum in each of ``count`` equal slices of the total (from ``generator``, else
    torch's global CPU one), and their importance-sampling weights at ``beta``."""
    offsets = torch.rand(count, dtype=torch.float64, generator=generator).numpy()
    slots = tree.find((np.arange(count) + offsets) * (tree.total / count))
    # (N P(i))**-beta / max_j (N P(j))**-beta == (p_i / p_min)**-beta, p = priority**alpha.
    return slots, (tree[slots] / tree.min) ** -beta


def priorities_of(losses: np.ndarray, prior_eps: float) -> np.ndarray:
    """The priorities per-transition ``losses`` give: ``|loss| + prior_eps``, checked
    finite and drawable."""
    if not np.all(np.isfinite(losses)):
        raise ValueError("priorities must be finite (a diverged loss?)")
    values = np.abs(losses) + prior_eps
    if np.any(values <= 0):
        raise ValueError("a priority of 0 would never be drawn again: pass prior_eps > 0")
    return values


@dataclass
class PriorityTurn(Turn):
    """A turn of a prioritised buffer: a :class:`Turn` plus what priorities need."""

    max_priority: float = 1.0  # at begin_turn
    undo_slots_p: list[np.ndarray] = field(default_factory=list)  # slots whose priority
    undo_priorities: list[np.ndarray] = field(default_factory=list)  # changed, old values
    undo_leaves: list[np.ndarray] = field(default_factory=list)  # ... and old tree leaves
    old_row_slots: list[np.ndarray] = field(default_factory=list)  # updates of pre-turn
    old_row_priorities: list[np.ndarray] = field(default_factory=list)  # rows, in order


class PrioritizedReplayBuffer(ReplayBuffer):
    """A replay buffer sampled in proportion to ``priority**alpha`` (see module docstring)."""

    def __init__(
        self, max_size: int, alpha: float = ALPHA, device: str | torch.device = "cpu"
    ) -> None:
        super().__init__(max_size, device=device)
        self.alpha = _check_unit("alpha", alpha)
        self._reset_priorities()

    @classmethod
    def from_spec(
        cls, spec: ReplayBufferSpec, device: str | torch.device = "cpu"
    ) -> PrioritizedReplayBuffer:
        """The buffer a :class:`~agilerl.models.ReplayBufferSpec` describes."""
        return cls(spec.max_size, alpha=spec.per_buffer_args.alpha, device=device)

    def _reset_priorities(self) -> None:
        self._tree = SumTree(self.max_size)
        self._priorities = np.zeros(self.max_size)  # raw, before ** alpha (for checkpoints)
        self.max_priority = 1.0

    def clear(self) -> None:
        super().clear()
        self._reset_priorities()

    def store(self, rows: Mapping[str, Any]) -> torch.Tensor:
        slots = super().store(rows)
        self._set(slots.numpy(), np.full(slots.numel(), self.max_priority))
        return slots

    def forked_tree(self) -> SumTree:
        """A copy of the sum tree of ``priority**alpha`` (a cohort agent's own view of the
        priorities for a generation, :mod:`agilerl.cohorts.replay`)."""
        return copy.deepcopy(self._tree)

    def _set(self, slots: np.ndarray, priorities: np.ndarray) -> None:
        turn = self._turn
        if isinstance(turn, PriorityTurn):
            turn.undo_slots_p.append(slots.copy())
            turn.undo_priorities.append(self._priorities[slots])
            # The leaves themselves, not recomputed from the priorities: bit for bit.
            turn.undo_leaves.append(self._tree[slots])
        self._priorities[slots] = priorities
        self._tree.update(slots, priorities**self.alpha)

    def priorities(self) -> np.ndarray:
        """The priority of every filled slot, in slot order (a copy)."""
        return self._priorities[: len(self)].copy()

    # Always returns the indices (update_priorities needs them): its second parameter is
    # the importance-sampling exponent, not ReplayBuffer.sample's return_indices.
    def sample(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, batch_size: int, beta: float = BETA
    ) -> dict[str, Any]:
        """``batch_size`` transitions drawn in proportion to ``priority**alpha``: the fields
        (as :meth:`ReplayBuffer.sample`), ``weights`` (float32, on the buffer's device) and
        ``indices`` (int64 slots, on the CPU) for :meth:`update_priorities`."""
        beta = _check_unit("beta", beta)
        if len(self) == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        count = int(batch_size)
        if count < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        slots, weights = stratified_draw(self._tree, count, beta, None)
        index = torch.from_numpy(slots)
        batch = self._gather(index)
        batch["weights"] = torch.as_tensor(weights, dtype=torch.float32, device=self.device)
        batch["indices"] = index
        return batch

    def update_priorities(
        self, indices: TensorLike, priorities: TensorLike, prior_eps: float = PRIOR_EPS
    ) -> None:
        """Give slots ``indices`` the priorities ``|priorities| + prior_eps`` (typically the
        per-sample loss or TD error of the batch that :meth:`sample` drew; a slot drawn
        twice takes its last value). ``prior_eps`` > 0 keeps every slot drawable."""
        slots = _numpy(indices)
        values = _numpy(priorities).astype(np.float64).reshape(-1)
        if slots.dtype.kind not in "iu" or slots.ndim != 1:
            raise ValueError(f"indices must be a 1-D integer array, got {slots.dtype}")
        if slots.size != values.size:
            raise ValueError(f"{slots.size} indices but {values.size} priorities")
        if slots.size and (slots.min() < 0 or slots.max() >= len(self)):
            raise ValueError(f"indices must lie in [0, {len(self)}), the filled slots")
        if not math.isfinite(prior_eps) or prior_eps < 0:
            raise ValueError(f"prior_eps must be a finite number >= 0, got {prior_eps!r}")
        slots = slots.astype(np.int64)
        values = priorities_of(values, prior_eps)
        turn = self._turn
        if isinstance(turn, PriorityTurn):
            old = ~turn.is_new(slots, self.max_size)
            turn.old_row_slots.append(slots[old])
            turn.old_row_priorities.append(values[old])
        self._set(slots, values)
        if values.size:
            self.max_priority = max(self.max_priority, float(values.max()))

    # -- turns (see the module docstring) -------------------------------------------------
    def _open_turn(self) -> PriorityTurn:
        turn = super()._open_turn()
        return PriorityTurn(**vars(turn), max_priority=self.max_priority)

    def _journal(self, turn: Turn) -> dict[str, Any]:
        assert isinstance(turn, PriorityTurn)
        slots = np.concatenate([np.zeros(0, np.int64), *turn.old_row_slots])
        values = np.concatenate([np.zeros(0), *turn.old_row_priorities])
        slots, values = last_occurrence(slots, values)
        return {
            **super()._journal(turn),
            "old_rows": {"slots": slots, "priorities": values},
            "max_priority": self.max_priority,
        }

    def _roll_back(self, turn: Turn) -> None:
        assert isinstance(turn, PriorityTurn)
        super()._roll_back(turn)
        if turn.undo_slots_p:
            # Newest first, so each slot's last value is the one it had before the turn.
            newest_first = np.concatenate(turn.undo_slots_p)[::-1]
            slots, values = last_occurrence(
                newest_first, np.concatenate(turn.undo_priorities)[::-1]
            )
            _, leaves = last_occurrence(newest_first, np.concatenate(turn.undo_leaves)[::-1])
            self._priorities[slots] = values
            filled = slots < turn.size
            self._tree.update(slots[filled], leaves[filled])
            self._tree.clear(slots[~filled])  # empty before the turn: unused again
        self.max_priority = turn.max_priority

    def merge(self, journals: Sequence[Mapping[str, Any]]) -> None:
        self._require_no_turn("merge")
        self.max_priority = max([self.max_priority, *(j["max_priority"] for j in journals)])
        if journals:
            slots = np.concatenate([np.asarray(j["old_rows"]["slots"]) for j in journals])
            values = np.concatenate([np.asarray(j["old_rows"]["priorities"]) for j in journals])
            if slots.size and (slots.min() < 0 or slots.max() >= len(self)):
                raise ValueError(f"journal priorities of slots outside [0, {len(self)})")
            if slots.size:
                self._set(*last_occurrence(slots.astype(np.int64), values.astype(np.float64)))
        super().merge(journals)

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The replay buffer's state (``buffer``) and the priorities of its filled slots."""
        return {
            "buffer": super().state_dict(),
            "alpha": self.alpha,
            "max_priority": self.max_priority,
            "priorities": torch.from_numpy(self.priorities()),
        }

    def load_state_dict(self, state: Mapping[str, Any], where: str = "memory") -> None:
        """Restore what :meth:`state_dict` saved, checked first (errors name the key path
        under ``where``); a refused state leaves the buffer as it was."""
        checkpoints.require(state, PER_STATE_LAYOUT, where)
        if state["alpha"] != self.alpha:
            raise checkpoints.fail(
                checkpoints.join(where, "alpha"),
                f"the saved buffer was sampled with alpha {state['alpha']}, this one uses "
                f"{self.alpha} (replay_buffer.per_buffer_args.alpha)",
            )
        size = state["buffer"]["size"]
        at = checkpoints.join(where, "priorities")
        saved = checkpoints.require_tensor(state["priorities"], at, (size,), torch.float64)
        saved = saved.numpy()
        if not np.all(np.isfinite(saved)) or np.any(saved <= 0):
            raise checkpoints.fail(at, "every priority must be a finite number > 0")
        top = state["max_priority"]
        if not math.isfinite(top) or top <= 0 or (size and top < saved.max()):
            raise checkpoints.fail(
                checkpoints.join(where, "max_priority"),
                f"{top} must be finite, > 0 and at least the largest priority",
            )
        super().load_state_dict(state["buffer"], checkpoints.join(where, "buffer"))
        self._reset_priorities()
        self._set(np.arange(size), saved.copy())
        self.max_priority = float(top)


#: A prioritised buffer's checkpoint state (:meth:`PrioritizedReplayBuffer.state_dict`).
PER_STATE_LAYOUT = {
    "buffer": STATE_LAYOUT,
    "alpha": float,
    "max_priority": float,
    "priorities": object,  # a float64 tensor of one row per filled slot, checked apart
}
