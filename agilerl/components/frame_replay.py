"""``FrameReplayBuffer``: uniform replay of stacked-frame observations (Atari's 4 x 84 x 84
bytes) that stores each frame once.

A stacked observation ``obs`` of ``k`` frames shares ``k - 1`` of them with the
``next_obs`` of the same transition, and all ``k`` with the ``obs`` of the environment's
next transition. A plain :class:`~agilerl.components.replay_buffer.ReplayBuffer` keeps
``2k`` frames a transition; this one keeps about one.

**Layout.** Frames live in a ring of their own (the *pool*), each under a *serial*: the
``s``-th frame ever written is at row ``s % capacity``. A transition's slot holds, instead
of ``obs`` and ``next_obs``, the serials of their frames (``obs_ref``, ``next_ref``: ``k``
int64 each) beside ``action``, ``reward`` and ``done``, so the slots are fixed-size rows and
everything :class:`ReplayBuffer` does with rows (the ring, turns and their undo log,
journals, checkpoints) works on them unchanged. Sampling reads the rows and gathers their
frames.

**Sharing is checked, never assumed.** When a batch is stored, row ``i``'s ``obs`` shares
the frames of the ``next_obs`` stored for row ``i`` of the previous batch (the same
environment copy, one step on) only if it is equal to it, frame for frame; and its
``next_obs`` shares ``obs``'s last ``k - 1`` frames only if they are equal. Otherwise new
frames are written (an episode's first transition writes ``k + 1``). So a sample is always
exactly what a plain buffer given the same batches returns; only the memory differs.

**The pool's capacity** grows when a write would overwrite a frame that a row still held
refers to, so no row ever loses a frame; it starts at ``max_size`` plus a sixteenth (each
episode's first transition and the ``k - 1`` steps of history its oldest rows reach back
to need a little more than one frame a row). Whether a write may reach a frame in use is
told by a lower bound of the rows' references, kept as rows come; the rows are read for
the exact oldest reference only when the bound says it might (9 times in 17,500 adds of
8 rows to a buffer of 100k, with ``benchmarks/replay_frames.py``'s episodes of 200 steps).

**Turns** (:mod:`~agilerl.components.replay_buffer`): the rows are rolled back by the base
class; the pool keeps its own undo log of the frames the turn overwrote that were there
before it, and its write position is put back. A journal carries its rows with their
frames (each once, the references renumbered into them), and merging writes those frames
to the pool under new serials. A checkpoint does the same with the rows held.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agilerl.components.replay_buffer import FIELDS, ReplayBuffer, Turn
from agilerl.files import checkpoints

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.networks.base import Observation
    from agilerl.networks.distributions import TensorLike

#: What a slot of this buffer stores: the serials of the frames of ``obs`` and
#: ``next_obs`` in place of the observations.
STORED = ("obs_ref", "action", "reward", "next_ref", "done")


def _tensor(value: Observation, where: str) -> torch.Tensor:
    if isinstance(value, (Mapping, tuple, list)):
        raise ValueError(
            f"{where}: a frame buffer takes stacked frames as one array (num_envs, frames, "
            "...), not a Dict/Tuple observation (replay_buffer.storage: frames)"
        )
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    if tensor.dim() < 2:
        raise ValueError(
            f"{where}: a frame buffer needs batches of stacked frames (num_envs, frames, ...), "
            f"got shape {tuple(tensor.shape)} (replay_buffer.storage: frames)"
        )
    return tensor


def _outside(refs: torch.Tensor, frames: int) -> bool:
    """Whether any of the frame references ``refs`` lies outside ``[0, frames)`` (the
    frames a journal or a checkpoint carries)."""
    return bool(refs.numel()) and (int(refs.min()) < 0 or int(refs.max()) >= frames)


@dataclass
class FrameTurn:
    """What the pool remembers during a turn, to be put back at its end."""

    serial: int  # next serial at begin_turn
    low: int  # oldest serial held at begin_turn
    lower: int  # the bound of the held rows' refs at begin_turn
    columns: torch.Tensor | None
    frames: torch.Tensor | None  # the pool itself, when it did not exist yet (None)
    # (serials, frames) of the pre-turn frames the turn overwrote, each saved once
    undo: list[tuple[torch.Tensor, torch.Tensor]] = field(default_factory=list)


class FrameReplayBuffer(ReplayBuffer):
    """A :class:`ReplayBuffer` of stacked-frame observations, each frame stored once
    (see the module docstring). Same interface, same samples."""

    fields = STORED

    def __init__(self, max_size: int, device: str | torch.device = "cpu") -> None:
        super().__init__(max_size, device)
        self._clear_frames()

    @staticmethod
    def observation_bytes(obs_bytes: int, shape: tuple[int, ...]) -> int:
        """About one frame (the pool's sixteenth to spare included) and the two rows of
        frame serials."""
        frames = shape[0] if shape else 1
        return (obs_bytes // frames) * 17 // 16 + 2 * frames * 8

    def _clear_frames(self) -> None:
        self._frames: torch.Tensor | None = None  # the pool: (capacity, *frame shape)
        self._serial = 0  # the serial of the next frame written
        self._low = 0  # the oldest serial the pool still holds
        self._lower = 0  # at most the oldest serial a held row refers to
        # next_ref of the last batch stored, row by row (None: nothing to share with)
        self._columns: torch.Tensor | None = None
        self._frame_turn: FrameTurn | None = None

    def clear(self) -> None:
        super().clear()
        self._clear_frames()

    @property
    def capacity(self) -> int:
        """Frames the pool holds (0 before the first batch)."""
        return 0 if self._frames is None else int(self._frames.shape[0])

    def frame_bytes(self) -> int:
        """Bytes of the frame pool (what the stacked observations cost)."""
        return 0 if self._frames is None else self._frames.numel() * self._frames.element_size()

    # -- writing ----------------------------------------------------------------------------
    def store(self, rows: Mapping[str, Any]) -> torch.Tensor:
        """Write a batch of transitions given by :data:`FIELDS` (``obs`` and ``next_obs``
        of shape ``(rows, frames, ...)``); returns the slots written. Rows of this
        buffer's own fields (:data:`STORED`, how :meth:`merge` stores a journal's) are
        written as they are: their frames must be in the pool already."""
        if set(rows) == set(STORED):
            return super().store(rows)
        if set(rows) != set(FIELDS):
            raise ValueError(f"a batch needs exactly the fields {FIELDS}, got {tuple(rows)}")
        obs, next_obs = _tensor(rows["obs"], "obs"), _tensor(rows["next_obs"], "next_obs")
        obs, next_obs = obs.to(self.device), next_obs.to(self.device)
        if obs.shape != next_obs.shape or obs.dtype != next_obs.dtype:
            raise ValueError(
                f"obs {tuple(obs.shape)} {obs.dtype} and next_obs {tuple(next_obs.shape)} "
                f"{next_obs.dtype} must have the same shape and dtype"
            )
        self._check_frames(obs)
        obs_ref, next_ref, new = self._references(obs, next_obs)
        count = obs.shape[0]
        slots = super().store(
            {
                "obs_ref": obs_ref,
                "action": rows["action"],
                "reward": rows["reward"],
                "next_ref": next_ref,
                "done": rows["done"],
            }
        )
        if count:  # the new rows are held too: the bound covers their refs
            self._lower = min(self._lower, int(obs_ref.min()), int(next_ref.min()))
        self._write_frames(new)
        # the last row of each copy, for the next batch to share with (when it is held)
        self._columns = next_ref if count <= self.max_size else None
        return slots

    def _check_frames(self, obs: torch.Tensor) -> None:
        if self._frames is not None and (
            obs.shape[2:] != self._frames.shape[1:] or obs.dtype != self._frames.dtype
        ):
            raise ValueError(
                f"frames of shape {tuple(obs.shape[2:])} {obs.dtype} do not match the "
                f"buffer's {tuple(self._frames.shape[1:])} {self._frames.dtype}"
            )

    def _references(
        self, obs: torch.Tensor, next_obs: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The frame serials of a batch's ``obs`` and ``next_obs``, and the frames to
        write (in serial order from :attr:`_serial`): shared where equal, new otherwise."""
        count, k = obs.shape[:2]
        device = self.device
        columns = self._columns
        if columns is not None and columns.shape[0] == count and columns.shape[1] == k:
            same = (self._frames_at(columns) == obs).flatten(1).all(1)
        else:
            same = torch.zeros(count, dtype=torch.bool, device=device)
        # next_obs drops obs's first frame and appends one (a frame stack's step)
        shifted = (next_obs[:, :-1] == obs[:, 1:]).flatten(1).all(1)
        obs_ref = torch.empty((count, k), dtype=torch.int64, device=device)
        next_ref = torch.empty((count, k), dtype=torch.int64, device=device)
        serial = self._serial
        fresh = ~same
        n_obs = int(fresh.sum())
        if columns is not None and bool(same.any()):
            obs_ref[same] = columns[same]
        obs_ref[fresh] = serial + torch.arange(n_obs * k, device=device).view(n_obs, k)
        serial += n_obs * k
        n_shift = int(shifted.sum())
        last = (serial + torch.arange(n_shift, device=device)).unsqueeze(1)
        next_ref[shifted] = torch.cat([obs_ref[shifted, 1:], last], dim=1)
        serial += n_shift
        whole = ~shifted
        n_whole = int(whole.sum())
        next_ref[whole] = serial + torch.arange(n_whole * k, device=device).view(n_whole, k)
        frame_shape = obs.shape[2:]
        new = torch.cat(
            [
                obs[fresh].reshape(-1, *frame_shape),
                next_obs[shifted, -1],
                next_obs[whole].reshape(-1, *frame_shape),
            ]
        )
        return obs_ref, next_ref, new

    def _oldest_held(self) -> int:
        """The oldest serial a held row refers to (the next serial when none does)."""
        if self._storage is None or self._size == 0:
            return self._serial
        return min(
            int(self._storage[name][: self._size].amin()) for name in ("obs_ref", "next_ref")
        )

    def _write_frames(self, frames: torch.Tensor) -> None:
        """Append ``frames`` to the pool (the rows that refer to them are written
        already), growing it first if they would overwrite a frame a held row refers to;
        during a turn, the pre-turn frames they overwrite are saved for :meth:`end_turn`."""
        count = frames.shape[0]
        if self._frames is None:
            capacity = self.max_size + self.max_size // 16 + 2 * count
            self._frames = torch.empty(
                (capacity, *frames.shape[1:]), dtype=frames.dtype, device=self.device
            )
        survivor = self._serial + count - self.capacity  # the oldest frame left after
        # `_lower` bounds the held rows' refs from below; the exact value (a read of every
        # row) is needed only when the bound says a frame in use might be overwritten.
        if self._lower < survivor:
            self._lower = self._oldest_held()
            if self._lower < survivor:
                self._grow(self._serial + count - self._lower + self.capacity // 8)
        capacity = self.capacity
        serials = self._serial + torch.arange(count, device=self.device)
        positions = serials % capacity
        turn = self._frame_turn
        if turn is not None:
            old = serials - capacity  # the frames these positions hold now
            pre_turn = (old >= self._low) & (old < turn.serial)
            if bool(pre_turn.any()):
                turn.undo.append((old[pre_turn], self._frames[positions[pre_turn]].clone()))
        self._frames[positions] = frames
        self._serial += count
        self._low = max(self._low, self._serial - capacity)

    def _grow(self, capacity: int) -> None:
        """Re-lay the pool in ``capacity`` rows, every frame it holds kept."""
        assert self._frames is not None
        old = self._frames
        pool = torch.empty((capacity, *old.shape[1:]), dtype=old.dtype, device=self.device)
        held = torch.arange(self._low, self._serial, device=self.device)
        pool[held % capacity] = old[held % old.shape[0]]
        self._frames = pool

    # -- reading ----------------------------------------------------------------------------
    def _frames_at(self, refs: torch.Tensor) -> torch.Tensor:
        """The frames of serials ``refs`` (any shape), as ``(*refs.shape, *frame)``."""
        assert self._frames is not None
        flat = (refs.reshape(-1) % self._frames.shape[0]).to(self.device)
        return self._frames.index_select(0, flat).view(*refs.shape, *self._frames.shape[1:])

    def _transitions(self, rows: dict[str, Any]) -> dict[str, Any]:
        """Stored rows as transitions (:data:`FIELDS`), their frames gathered."""
        out = {
            "obs": self._frames_at(rows["obs_ref"]),
            "action": rows["action"],
            "reward": rows["reward"],
            "next_obs": self._frames_at(rows["next_ref"]),
            "done": rows["done"],
        }
        if "indices" in rows:
            out["indices"] = rows["indices"]
        return out

    def sample(self, batch_size: int, return_indices: bool = False) -> dict[str, Any]:
        return self._transitions(super().sample(batch_size, return_indices))

    def sample_from_indices(self, indices: TensorLike) -> dict[str, Any]:
        return self._transitions(super().sample_from_indices(indices))

    # -- turns ------------------------------------------------------------------------------
    def _open_turn(self) -> Turn:
        self._frame_turn = FrameTurn(
            self._serial, self._low, self._lower, self._columns, self._frames
        )
        return super()._open_turn()

    def _compact(self, rows: dict[str, Any]) -> tuple[dict[str, Any], torch.Tensor]:
        """Rows with their frames (CPU), each frame once; the refs renumbered into them."""
        refs = torch.cat([rows["obs_ref"], rows["next_ref"]], dim=1)
        serials, local = torch.unique(refs, return_inverse=True)
        k = rows["obs_ref"].shape[1]
        rows = {**rows, "obs_ref": local[:, :k].cpu(), "next_ref": local[:, k:].cpu()}
        return rows, self._frames_at(serials).cpu()

    def _journal(self, turn: Turn) -> dict[str, Any]:
        journal = super()._journal(turn)
        if journal["rows"] is None:
            return {**journal, "frames": None}
        rows, frames = self._compact(journal["rows"])
        return {**journal, "rows": rows, "frames": frames}

    def _roll_back(self, turn: Turn) -> None:
        super()._roll_back(turn)
        frame_turn = self._frame_turn
        assert frame_turn is not None
        if frame_turn.frames is None:
            self._clear_frames()
            return
        assert self._frames is not None
        # by serial: right also when the pool grew during the turn (its layout changed)
        for serials, frames in frame_turn.undo:
            self._frames[serials % self._frames.shape[0]] = frames
        self._serial, self._low = frame_turn.serial, frame_turn.low
        self._lower = frame_turn.lower  # the pre-turn rows are back
        self._columns = frame_turn.columns
        self._frame_turn = None

    def merge(self, journals: Sequence[Mapping[str, Any]]) -> None:
        """Store the rows of ``journals`` (from :meth:`end_turn`) one journal after the
        other, their frames written to the pool first."""
        self._require_no_turn("merge")
        for journal in journals:
            rows, frames = journal["rows"], journal.get("frames")
            if rows is None:
                super().merge([journal])
                continue
            if not torch.is_tensor(frames) or frames.dim() < 1:
                raise ValueError("a frame buffer's journal carries its frames (from end_turn)")
            if any(_outside(rows[name], frames.shape[0]) for name in ("obs_ref", "next_ref")):
                raise ValueError("a journal's frame references must lie within its frames")
            self._check_frames(frames.unsqueeze(1))
            base = self._serial  # the serials the journal's frames are written under
            stored = {
                **rows,
                "obs_ref": rows["obs_ref"] + base,
                "next_ref": rows["next_ref"] + base,
            }
            super().merge([{"written": journal["written"], "rows": stored}])
            self._lower = min(self._lower, base)
            self._write_frames(frames.to(self.device))
        self._columns = None  # the next batch continues none of these rows

    # -- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The rows held (their refs renumbered into ``frames``) and their frames."""
        state = super().state_dict()
        if state["data"] is None:
            return {"buffer": state, "frames": None}
        data, frames = self._compact(state["data"])
        return {"buffer": {**state, "data": data}, "frames": frames}

    def load_state_dict(self, state: Mapping[str, Any], where: str = "memory") -> None:
        """Restore what :meth:`state_dict` saved, checked first (errors name the key path
        under ``where``); a refused state leaves the buffer as it was."""
        checkpoints.require(state, FRAME_STATE_LAYOUT, where)
        frames, data = state["frames"], state["buffer"]["data"]
        at = checkpoints.join(where, "frames")
        if (frames is None) != (data is None):
            raise checkpoints.fail(at, "frames and the buffer's data go together")
        if frames is not None:
            if not torch.is_tensor(frames) or frames.dim() < 1:
                raise checkpoints.fail(at, "expected a tensor of frames")
            for name in ("obs_ref", "next_ref"):
                refs = data.get(name)
                if torch.is_tensor(refs) and _outside(refs, frames.shape[0]):
                    raise checkpoints.fail(
                        f"{checkpoints.join(where, 'buffer')}.data.{name}",
                        f"references must lie in [0, {frames.shape[0]}), the saved frames",
                    )
        super().load_state_dict(state["buffer"], checkpoints.join(where, "buffer"))
        self._clear_frames()
        if frames is not None:
            self._write_frames(frames.to(self.device))


#: A frame buffer's checkpoint state (:meth:`FrameReplayBuffer.state_dict`).
FRAME_STATE_LAYOUT = {"buffer": dict, "frames": object}
