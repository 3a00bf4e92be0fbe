"""``ReplayBuffer``: uniform experience replay for off-policy algorithms.

Transitions live in a ring of preallocated torch tensors on the buffer's device, one tensor
per field (and per leaf of a Dict/Tuple observation), so sampling is a single
``index_select`` per leaf with no Python loop over transitions. The storage is allocated
from the first batch added: its dtypes and per-transition shapes fix those of the buffer,
which is why the buffer needs no observation or action space.

Batches come from a vectorised environment: every leaf has the number of environments as
its leading dimension. Sampling draws indices with the global torch CPU generator, so a run
seeded with ``torch.manual_seed`` samples the same transitions on any device.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl import checkpoints
from agilerl.observations import map_tree, tree_leaves

#: Fields of a transition, in the order :meth:`ReplayBuffer.add` takes them.
FIELDS = ("obs", "action", "reward", "next_obs", "done")


def _as_tensor(value: Any) -> torch.Tensor:
    """A leaf as a tensor with a leading batch dimension (tensors are kept where they are)."""
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    if tensor.dim() == 0:
        raise ValueError("replay buffer batches need a leading batch dimension (num_envs)")
    return tensor


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

    def __len__(self) -> int:
        return self._size

    @property
    def position(self) -> int:
        """Slot the next transition goes to."""
        return self._pos

    def clear(self) -> None:
        """Forget every transition and the storage (the next batch may differ in shape)."""
        self._storage = None
        self._pos = 0
        self._size = 0

    def _allocate(self, batch: dict[str, Any]) -> None:
        def empty(leaf: torch.Tensor) -> torch.Tensor:
            shape = (self.max_size, *leaf.shape[1:])
            return torch.empty(shape, dtype=leaf.dtype, device=self.device)

        self._storage = {name: map_tree(empty, batch[name]) for name in self.fields}

    def add(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any) -> None:
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
        first = min(kept, self.max_size - start)  # rows before the ring wraps around

        def check(store: torch.Tensor, data: torch.Tensor) -> None:
            if data.shape[1:] != store.shape[1:]:
                raise ValueError(
                    f"transition shape {tuple(data.shape[1:])} does not match the buffer's "
                    f"{tuple(store.shape[1:])}"
                )

        def write(store: torch.Tensor, data: torch.Tensor) -> None:
            data = data[skip:].to(self.device)
            store[start : start + first] = data[:first]
            if first < kept:
                store[: kept - first] = data[first:]

        # Every field is checked before any is written: a bad batch leaves no half-written row.
        for name in self.fields:
            map_tree(check, self._storage[name], batch[name])
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

    def sample_from_indices(self, indices: Any) -> dict[str, Any]:
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

    # -- checkpoints ----------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The filled slots (CPU tensors, in slot order) and the write position: loading it
        into a buffer of the same ``max_size`` continues exactly where this one stands."""
        data = None
        if self._storage is not None:
            data = {
                name: map_tree(lambda store: store[: self._size].cpu().clone(), tree)
                for name, tree in self._storage.items()
            }
        return {"max_size": self.max_size, "position": self._pos, "size": self._size, "data": data}

    def load_state_dict(self, state: Mapping[str, Any], where: str = "memory") -> None:
        """Restore what :meth:`state_dict` saved (onto this buffer's device). The state is
        checked first (a :class:`~agilerl.checkpoints.CheckpointError` names the key path
        ``where...``); a refused state leaves the buffer as it was."""
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
