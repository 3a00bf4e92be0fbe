"""``ExperienceSharing``: generation-synchronous experience sharing between the agents of a
population, the same in a run of one process or of many.

An off-policy population shares its replay buffer (every agent's experience feeds every
agent). If each agent simply wrote into it while it trained, what agent 2 learns from
would depend on whether agents 0 and 1 had trained before it on the same process, and a
run sharded over processes would not give the run on one. So the sharing is
synchronised on generations:

* during a generation, each agent learns from the shared buffer **as it stood when the
  generation began, plus its own new transitions** (never those of another agent of the
  same generation);
* at the generation's end, every agent's new transitions are stored, **in slot order**
  (the agent's place in the population), in every process's copy of the buffer.

A turn (:meth:`ExperienceSharing.begin_turn` to :meth:`ExperienceSharing.end_turn`) leaves
each buffer exactly as it found it and keeps the turn's *journal*: the rows it stored, in
order, and, for a prioritised buffer, the priorities it gave to rows that were there
before it. Rows the turn stored itself come back through the merge at the maximum
priority, as any new row does. The buffers do this with an undo log of the rows a turn
overwrote (see :mod:`agilerl.components.replay_buffer` and
:mod:`agilerl.components.prioritized_replay`), so a turn costs in proportion to what it
wrote, never to the size of the buffer. :meth:`ExperienceSharing.merge` then applies the
journals of all slots of the generation (gathered from every process): first every
slot's priorities of old rows in slot order (a later slot's wins on a row two touched),
then every slot's rows in slot order. Each process's copy of the buffer began the
generation identical and applies the same journals in the same order, so the copies stay
bit-identical however the population is split over processes.

What this changes against writing straight into the buffer: within a generation an agent
no longer sees the transitions of the agents that trained before it (from the next
generation on it sees them all); a prioritised buffer's rows enter at the maximum
priority when merged, whatever priority their own agent had given them.
"""

from __future__ import annotations

from typing import Any

from agilerl.components.replay_buffer import ReplayBuffer


class ExperienceSharing:
    """The turns of a generation over one or more buffers filled in step (a main buffer
    and the n-step buffer beside it); ``None`` entries are ignored."""

    def __init__(self, *buffers: ReplayBuffer | None) -> None:
        self.buffers = tuple(buffer for buffer in buffers if buffer is not None)
        for buffer in self.buffers:
            if not isinstance(buffer, ReplayBuffer):
                raise TypeError(f"ExperienceSharing shares replay buffers, got {buffer!r}")
        self._slot: int | None = None  # the slot whose turn is open
        self._journals: dict[int, list[dict[str, Any]]] = {}

    def begin_turn(self, slot: int) -> None:
        """Before the agent of ``slot`` trains: every buffer starts a turn."""
        if self._slot is not None:
            raise RuntimeError(f"begin_turn({slot}): the turn of slot {self._slot} is still open")
        if slot in self._journals:
            raise RuntimeError(f"begin_turn({slot}): slot {slot} already had its turn (take())")
        begun: list[ReplayBuffer] = []
        try:
            for buffer in self.buffers:
                buffer.begin_turn()
                begun.append(buffer)
        except BaseException:
            for buffer in begun:  # none of them stays in a turn
                buffer.end_turn()
            raise
        self._slot = slot

    def end_turn(self, slot: int) -> None:
        """After the agent of ``slot`` trained (and its loop flushed what it held back):
        keep the turn's journal and put every buffer back as it stood at begin_turn."""
        if self._slot != slot:
            raise RuntimeError(f"end_turn({slot}): the open turn is that of slot {self._slot}")
        for buffer in self.buffers:  # all or none: a refusal leaves every turn open
            buffer.check_turn_end()
        self._journals[slot] = [buffer.end_turn() for buffer in self.buffers]
        self._slot = None

    def record(self, slot: int, journals: list[dict[str, Any]]) -> None:
        """The journals of a turn taken outside the buffers, one per buffer in order (a
        cohort's views, :class:`~agilerl.cohorts.replay.LockstepReplay`, which give each
        agent the journals its own turn would have had)."""
        if self._slot is not None:
            raise RuntimeError(f"record({slot}): the turn of slot {self._slot} is still open")
        if slot in self._journals:
            raise RuntimeError(f"record({slot}): slot {slot} already had its turn (take())")
        if len(journals) != len(self.buffers):
            raise ValueError(
                f"record({slot}): {len(journals)} journals for {len(self.buffers)} buffers"
            )
        self._journals[slot] = list(journals)

    def take(self) -> dict[int, Any]:
        """This process's journals of the generation, by slot (then forgotten):
        picklable, for gathering from every process."""
        if self._slot is not None:
            raise RuntimeError(f"take(): the turn of slot {self._slot} is still open")
        journals, self._journals = self._journals, {}
        return journals

    def merge(self, journals: dict[int, Any]) -> None:
        """Apply every slot's journal of the generation (from every process) to the
        buffers: old-row priorities of all slots in slot order, then the rows of all
        slots in slot order (see the module docstring)."""
        if self._slot is not None:
            raise RuntimeError(f"merge(): the turn of slot {self._slot} is still open")
        order = sorted(journals)
        for slot in order:
            if len(journals[slot]) != len(self.buffers):
                raise ValueError(
                    f"merge(): the journal of slot {slot} has {len(journals[slot])} parts, "
                    f"one per buffer expected ({len(self.buffers)}): was it made by an "
                    "ExperienceSharing of the same buffers?"
                )
        for i, buffer in enumerate(self.buffers):
            buffer.merge([journals[slot][i] for slot in order])
