"""``ReplayBuffer``: uniform experience replay for off-policy algorithms.

Transitions live in a ring of preallocated torch tensors on the buffer's device, one tensor
per field (and per leaf of a Dict/Tuple observation), so sampling is a single
``index_select`` per leaf with no Python loop over transitions. The storage is allocated
from the first batch added: its dtypes and per-transition shapes fix those of the buffer,
which is why the buffer needs no observation or action space.

Batches come from a vectorised environment: every leaf has the number of environments as
its leading dimension. Sampling draws indices with the global torch CPU generator, so a run
seeded with ``torch.manual_seed`` samples the same transitions on any device.

**Turns** (generation-synchronous experience sharing,
:class:`~agilerl.training.sharing.ExperienceSharing`). Between :meth:`ReplayBuffer.begin_turn`
and :meth:`ReplayBuffer.end_turn` the buffer is used as usual, and it remembers two things:
the write position and size it started from, and, the first time the turn overwrites a row
that was there before it, that row's old contents (an undo log: only overwritten rows are
copied, never the storage). The turn's writes are contiguous in the ring from the starting
position, so the rows it stored that are still held are the last ``min(written,
max_size)`` slots before the write position. :meth:`end_turn` gathers those rows (the
turn's *journal*, on the CPU, plus how many rows it wrote in all), writes the undo log
back and restores position and size: the buffer is as it stood at :meth:`begin_turn`.
:meth:`ReplayBuffer.merge` stores the journals of several turns in the order given. A
journal of a turn that wrote more rows than the buffer holds keeps only the last
``max_size`` of them and the count of the others, which merging skips over: storing them
all would leave the very same buffer (the kept rows overwrite every slot).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from agilerl.components.observations import map_tree, tree_leaves
from agilerl.files import checkpoints

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.networks.base import Observation
    from agilerl.networks.distributions import TensorLike

#: Fields of a transition, in the order :meth:`ReplayBuffer.add` takes them.
FIELDS = ("obs", "action", "reward", "next_obs", "done")


def _as_tensor(value: TensorLike) -> torch.Tensor:
    """A leaf as a tensor with a leading batch dimension (tensors are kept where they are)."""
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    if tensor.dim() == 0:
        raise ValueError("replay buffer batches need a leading batch dimension (num_envs)")
    return tensor


@dataclass
class Turn:
    """What a buffer remembers during a turn (see the module docstring)."""

    position: int  # write position at begin_turn
    size: int  # filled slots at begin_turn
    allocated: bool  # whether the storage existed at begin_turn
    written: int = 0  # rows stored during the turn (every row of every batch)
    # The old contents of the pre-turn rows the turn overwrote, in the order it did: a run
    # of the ring from slot `undo_start` (the turn writes on from its starting position;
    # before the buffer is full, the first pre-turn row it reaches is slot 0).
    undo_start: int = 0
    undo_rows: list[dict[str, Any]] = field(default_factory=list)

    def is_new(self, slots: np.ndarray, max_size: int) -> np.ndarray:
        """Which of ``slots`` hold a row the turn stored (rather than a pre-turn one)."""
        return (slots - self.position) % max_size < min(self.written, max_size)


def _write_ring(store: torch.Tensor, start: int, rows: torch.Tensor) -> None:
    """Write ``rows`` (at most the ring's length) into ``store`` from slot ``start`` on,
    wrapping around at the end."""
    first = min(rows.shape[0], store.shape[0] - start)  # rows before the ring wraps around
    store[start : start + first] = rows[:first]
    if first < rows.shape[0]:
        store[: rows.shape[0] - first] = rows[first:]


class ReplayBuffer:
    """Circular buffer of the last ``max_size`` transitions, sampled uniformly with
    replacement. See the module docstring for the storage layout."""

    #: The fields every stored row has (subclasses that store more extend it).
    fields: ClassVar[tuple[str, ...]] = FIELDS

    def __init__(self, max_size: int, device: str | torch.device = "cpu") -> None:
        if isinstance(max_size, bool) or int(max_size) != max_size or max_size < 1:
            raise ValueError(f"max_size must be a positive integer, got {max_size!r}")
        self.max_size = int(max_size)
        self.device = torch.device(device)
        # Field -> tensor (or nested dict/tuple of tensors); None until the first add.
        self._storage: dict[str, Any] | None = None
        self._pos = 0  # next slot to write
        self._size = 0  # filled slots
        self._turn: Turn | None = None  # open between begin_turn and end_turn

    def __len__(self) -> int:
        return self._size

    @staticmethod
    def observation_bytes(obs_bytes: int, shape: tuple[int, ...]) -> int:
        """What ``obs`` and ``next_obs`` cost a row, for observations of ``shape`` that
        take ``obs_bytes`` (the pre-flight's estimate): both, as given."""
        return 2 * obs_bytes

    @property
    def position(self) -> int:
        """Slot the next transition goes to."""
        return self._pos

    def clear(self) -> None:
        """Forget every transition and the storage (the next batch may differ in shape)."""
        self._require_no_turn("clear")
        self._storage = None
        self._pos = 0
        self._size = 0

    def _allocate(self, batch: dict[str, Any]) -> None:
        def empty(leaf: torch.Tensor) -> torch.Tensor:
            shape = (self.max_size, *leaf.shape[1:])
            return torch.empty(shape, dtype=leaf.dtype, device=self.device)

        self._storage = {name: map_tree(empty, batch[name]) for name in self.fields}

    def add(
        self,
        obs: Observation,
        action: TensorLike,
        reward: TensorLike,
        next_obs: Observation,
        done: TensorLike,
    ) -> None:
        """Store a batch of transitions, one per environment (leading dimension of every
        array). A batch larger than the buffer keeps only its last ``max_size`` rows."""
        values = (obs, action, reward, next_obs, done)
        self.store(dict(zip(FIELDS, values, strict=True)))

    def store(self, rows: Mapping[str, Any]) -> torch.Tensor:
        """Write a batch given as a mapping of every field in :attr:`fields`; returns the
        slots written (a CPU int64 tensor, in the order of the rows that were kept)."""
        if set(rows) != set(self.fields):
            raise ValueError(f"a batch needs exactly the fields {self.fields}, got {tuple(rows)}")
        batch = {name: map_tree(_as_tensor, rows[name]) for name in self.fields}
        sizes = {leaf.shape[0] for name in self.fields for leaf in tree_leaves(batch[name])}
        if len(sizes) != 1:
            raise ValueError(f"every field of a batch needs the same length, got {sorted(sizes)}")
        count = sizes.pop()
        if self._storage is None:
            self._allocate(batch)
        assert self._storage is not None
        skip = max(0, count - self.max_size)  # rows overwritten within this very batch
        start = (self._pos + skip) % self.max_size
        kept = count - skip

        def check(store: torch.Tensor, data: torch.Tensor) -> None:
            if data.shape[1:] != store.shape[1:]:
                raise ValueError(
                    f"transition shape {tuple(data.shape[1:])} does not match the buffer's "
                    f"{tuple(store.shape[1:])}"
                )

        def write(store: torch.Tensor, data: torch.Tensor) -> None:
            _write_ring(store, start, data[skip:].to(self.device))

        # Every field is checked before any is written: a bad batch leaves no half-written row.
        for name in self.fields:
            map_tree(check, self._storage[name], batch[name])
        if self._turn is not None:
            self._save_overwritten(self._turn, count)
        for name in self.fields:
            map_tree(write, self._storage[name], batch[name])
        self._pos = (self._pos + count) % self.max_size
        self._size = min(self._size + count, self.max_size)
        return (start + torch.arange(kept)) % self.max_size

    def sample(self, batch_size: int, return_indices: bool = False) -> dict[str, Any]:
        """``batch_size`` transitions drawn uniformly with replacement: a dict keyed by
        :data:`FIELDS` of tensors on the buffer's device (observations nested as added);
        with ``return_indices`` also ``indices``, the slots drawn (int64, on the CPU), to
        read a second buffer filled in step with this one (:meth:`sample_from_indices`)."""
        if self._size == 0 or self._storage is None:
            raise ValueError("cannot sample from an empty replay buffer")
        # Indices come from the CPU generator whatever the device: same samples everywhere.
        index = torch.randint(0, self._size, (int(batch_size),))
        batch = self._gather(index)
        if return_indices:
            batch["indices"] = index
        return batch

    def sample_from_indices(self, indices: TensorLike) -> dict[str, Any]:
        """The transitions held in slots ``indices`` (as :meth:`sample` returns them): how a
        second buffer filled in step with this one is read at the same slots."""
        if self._size == 0 or self._storage is None:
            raise ValueError("cannot sample from an empty replay buffer")
        index = indices if torch.is_tensor(indices) else torch.as_tensor(np.asarray(indices))
        if index.dim() != 1 or index.dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"indices must be a 1-D integer array, got {index.dtype} of shape "
                f"{tuple(index.shape)}"
            )
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= self._size):
            raise ValueError(f"indices must lie in [0, {self._size}), the filled slots")
        return self._gather(index)

    def _gather(self, index: torch.Tensor) -> dict[str, Any]:
        assert self._storage is not None
        index = index.to(self.device)
        return {
            name: map_tree(lambda store: store.index_select(0, index), self._storage[name])
            for name in self.fields
        }

    # -- turns (experience sharing; see the module docstring) --------------------------------
    def begin_turn(self) -> None:
        """Start remembering what the next writes change, to undo it at :meth:`end_turn`."""
        self._require_no_turn("begin_turn")
        self._turn = self._open_turn()

    def _open_turn(self) -> Turn:
        return Turn(self._pos, self._size, self._storage is not None)

    def end_turn(self) -> dict[str, Any]:
        """Put the buffer back as it stood at :meth:`begin_turn` and return the turn's
        journal (picklable: CPU tensors, arrays and numbers) for :meth:`merge`."""
        self.check_turn_end()
        turn = self._turn
        assert turn is not None
        journal = self._journal(turn)
        self._roll_back(turn)
        self._turn = None
        return journal

    def check_turn_end(self) -> None:
        """Refuse, changing nothing, an :meth:`end_turn` that would fail (several buffers
        filled in step end their turns together only when none would)."""
        if self._turn is None:
            raise RuntimeError(f"{type(self).__name__}.end_turn: no turn is open (begin_turn)")

    def merge(self, journals: Sequence[Mapping[str, Any]]) -> None:
        """Store the rows of ``journals`` (from :meth:`end_turn`, possibly of other
        processes' copies of this buffer) one journal after the other."""
        self._require_no_turn("merge")
        for journal in journals:
            rows = journal["rows"]
            kept = 0 if rows is None else tree_leaves(rows)[0].shape[0]
            skipped = journal["written"] - kept  # overwritten by `rows` in any case
            if kept > self.max_size or skipped < 0 or (skipped and kept != self.max_size):
                raise ValueError(
                    f"a journal of {journal['written']} rows holding {kept} does not come "
                    f"from a buffer of max_size {self.max_size}"
                )
            if rows is None:
                continue
            self._pos = (self._pos + skipped) % self.max_size
            self._size = min(self._size + skipped, self.max_size)
            self.store(rows)

    def _require_no_turn(self, what: str) -> None:
        if self._turn is not None:
            raise RuntimeError(
                f"{type(self).__name__}.{what}: a turn is open (end_turn first): its writes "
                "are undone at end_turn"
            )

    def _save_overwritten(self, turn: Turn, count: int) -> None:
        """Before a batch of ``count`` rows is written: the old contents of the pre-turn
        rows it is the first of the turn to overwrite."""
        first = min(count, self.max_size - turn.written)  # slots no earlier batch wrote
        if first > 0 and turn.size:
            slots = (turn.position + turn.written + torch.arange(first)) % self.max_size
            slots = slots[slots < turn.size]  # filled at begin_turn ([0, size) or all)
            if slots.numel():
                if not turn.undo_rows:
                    turn.undo_start = int(slots[0])
                turn.undo_rows.append(self._gather(slots))
        turn.written += count

    def _journal(self, turn: Turn) -> dict[str, Any]:
        kept = min(turn.written, self.max_size)
        rows = None
        if kept:
            start = turn.position + turn.written - kept
            rows = map_tree(
                lambda t: t.cpu(), self._gather((start + torch.arange(kept)) % self.max_size)
            )
        return {"written": turn.written, "rows": rows}

    def _roll_back(self, turn: Turn) -> None:
        # Chunk by chunk into slices of the ring: no concatenated copy, and no index_copy_
        # (several times slower on the CPU for byte images).
        start = turn.undo_start
        for old in turn.undo_rows:
            assert self._storage is not None
            map_tree(lambda s, rows, at=start: _write_ring(s, at, rows), self._storage, old)
            start = (start + tree_leaves(old)[0].shape[0]) % self.max_size
        if not turn.allocated:
            self._storage = None
        self._pos, self._size = turn.position, turn.size

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The filled slots (CPU tensors, in slot order) and the write position: loading it
        into a buffer of the same ``max_size`` continues exactly where this one stands."""
        self._require_no_turn("state_dict")
        data = None
        if self._storage is not None:
            data = {
                name: map_tree(lambda store: store[: self._size].cpu().clone(), tree)
                for name, tree in self._storage.items()
            }
        return {"max_size": self.max_size, "position": self._pos, "size": self._size, "data": data}

    def load_state_dict(self, state: Mapping[str, Any], where: str = "memory") -> None:
        """Restore what :meth:`state_dict` saved (onto this buffer's device). The state is
        checked first (a :class:`~agilerl.files.checkpoints.CheckpointError` names the key path
        ``where...``); a refused state leaves the buffer as it was."""
        self._require_no_turn("load_state_dict")
        checkpoints.require(state, STATE_LAYOUT, where)
        if state["max_size"] != self.max_size:
            raise checkpoints.fail(
                checkpoints.join(where, "max_size"),
                f"the saved buffer holds {state['max_size']} transitions, this one {self.max_size}",
            )
        size, position = state["size"], state["position"]
        if not 0 <= size <= self.max_size or not 0 <= position < self.max_size:
            raise checkpoints.fail(
                where, f"size {size} / position {position} do not fit max_size {self.max_size}"
            )
        if size < self.max_size and position != size:
            raise checkpoints.fail(
                where, f"position {position} of a buffer not yet full must be its size {size}"
            )
        data, at = state["data"], checkpoints.join(where, "data")
        if data is None:
            if size:
                raise checkpoints.fail(at, f"missing, though size is {size}")
        else:
            checkpoints.require_keys(data, self.fields, at, "a transition field")
            for name in self.fields:
                _check_leaves(data[name], f"{at}.{name}", size)
        self.clear()
        if data is not None:
            self._allocate(data)
            assert self._storage is not None

            def fill(store: torch.Tensor, saved: torch.Tensor) -> None:
                store[:size] = saved.to(self.device)

            for name in self.fields:
                map_tree(fill, self._storage[name], data[name])
            self._size = size
            self._pos = position


#: A replay buffer's checkpoint state (:meth:`ReplayBuffer.state_dict`).
STATE_LAYOUT = {
    "max_size": int,
    "position": int,
    "size": int,
    "data": checkpoints.Nullable(dict),
}


def _check_leaves(tree: Any, where: str, size: int) -> None:
    """Every leaf of a saved field is a tensor of ``size`` rows."""
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            _check_leaves(value, checkpoints.join(where, key), size)
    elif isinstance(tree, (tuple, list)):
        for i, value in enumerate(tree):
            _check_leaves(value, checkpoints.join(where, i), size)
    elif not torch.is_tensor(tree) or tree.dim() == 0 or tree.shape[0] != size:
        found = tuple(tree.shape) if torch.is_tensor(tree) else type(tree).__name__
        raise checkpoints.fail(where, f"expected a tensor of {size} rows, found {found}")
