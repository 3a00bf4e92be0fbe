"""A cohort's views of the shared replay buffer during a generation.

Experience sharing is generation-synchronous (:mod:`agilerl.training.sharing`): during a
generation each agent learns from the buffer as the generation found it plus its own new
transitions, and every agent's transitions are stored, in slot order, when the generation
ends. Agents trained one at a time get that from the buffer's undo log. A cohort steps
its agents together, so every agent has written the same number of rows at every moment,
and a one-at-a-time turn would have written them at the same ring slots. So one overlay
holds each agent's own rows, ``(P, capacity, ...)``, indexed like the ring from the
generation's starting position; the buffer itself is only read. A sampled slot that the
turn has written is read from the agent's overlay, any other from the buffer. At the end,
each agent's journal is exactly what its own turn's would have been
(:meth:`~agilerl.components.replay_buffer.ReplayBuffer.end_turn`), and the generation's
merge is unchanged.

A :class:`LockstepReplay` is the cohort's counterpart of
:class:`~agilerl.components.replay.Replay`: it stores every agent's vector step in its
view, with an n-step buffer beside the main one (Rainbow) through one
:class:`~agilerl.components.n_step_replay.NStepWindow` over the joined rows of the
cohort's environments (every row is its own sub-environment, so each agent's n-step sums
are its own; all agents share the buffer's ``gamma``, which the run checks), and draws
each learning round's batch. :class:`LockstepPrioritizedReplay` adds each agent's own
priorities: a copy of the buffer's sum tree per agent for the generation (a copy of
``2 x max_size`` floats, not of the rows), drawn stratified by the agent's generator as
its own turn draws from torch's, updated with its own losses, and journalled as its own
turn's would be. :data:`LOCKSTEP_REPLAYS` picks one by the main buffer's class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import torch

from agilerl.cohorts.learners import PrioritizedLearner, ReplayLearner
from agilerl.components.n_step_replay import STEP_FIELDS, NStepReplayBuffer, NStepWindow
from agilerl.components.observations import map_tree, tree_leaves
from agilerl.components.prioritized_replay import (
    PrioritizedReplayBuffer,
    priorities_of,
    stratified_draw,
)
from agilerl.components.replay import annealed_beta
from agilerl.components.replay_buffer import FIELDS, ReplayBuffer, _as_tensor
from agilerl.components.sum_tree import last_occurrence


class CohortReplay:
    """``agents`` views of the ring of ``memory`` (its rows; priorities are
    :class:`LockstepPrioritizedReplay`'s) for a generation in which each stores at most
    ``rows`` transitions (see the module docstring)."""

    def __init__(self, memory: ReplayBuffer, agents: int, rows: int) -> None:
        self.memory = memory
        self.fields = memory.fields
        self.agents = agents
        self.max_size = memory.max_size
        self.capacity = max(1, min(int(rows), self.max_size))
        self.start = memory.position  # where the generation's first row goes
        self.base_size = len(memory)
        self.written = 0  # rows each agent has stored
        self._overlay: dict[str, Any] | None = None

    def __len__(self) -> int:
        """The rows each agent's view holds."""
        return min(self.base_size + self.written, self.max_size)

    def store(self, rows: Mapping[str, Any]) -> np.ndarray:
        """One vector step of every agent, a mapping of the buffer's fields: each leaf
        ``(P * n, ...)``, agent ``p``'s rows the ``p``-th block. Returns the ring slots
        every agent's ``n`` rows went to (as its own turn's ``store`` would)."""

        def blocks(leaf: Any) -> torch.Tensor:
            tensor = _as_tensor(leaf)
            return tensor.reshape(self.agents, -1, *tensor.shape[1:])

        batch = {name: map_tree(blocks, rows[name]) for name in self.fields}
        count = int(tree_leaves(batch["obs"])[0].shape[1])
        if count > self.capacity:
            raise ValueError(f"a step of {count} rows per agent exceeds the view's {self.capacity}")
        if self._overlay is None:
            device = self.memory.device

            def empty(leaf: torch.Tensor) -> torch.Tensor:
                return torch.empty(
                    (self.agents, self.capacity, *leaf.shape[2:]), dtype=leaf.dtype, device=device
                )

            self._overlay = {name: map_tree(empty, batch[name]) for name in self.fields}
        ring = (self.written + torch.arange(count)) % self.max_size
        offsets = ring % self.capacity

        def write(store: torch.Tensor, data: torch.Tensor) -> None:
            store[:, offsets.to(store.device)] = data.to(store.device, store.dtype)

        for name in self.fields:
            map_tree(write, self._overlay[name], batch[name])
        self.written += count
        return ((self.start + ring) % self.max_size).numpy()

    def fresh(self, slots: np.ndarray) -> np.ndarray:
        """Which ring ``slots`` hold a row this turn stored (rather than a pre-turn one)."""
        return (slots - self.start) % self.max_size < min(self.written, self.max_size)

    def draw(
        self, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
    ) -> torch.Tensor:
        """Slots of every agent's view, ``(P, max(sizes))``: :func:`draw_padded` over the
        view's rows, so an agent draws exactly what it would draw alone."""
        size = len(self)
        if size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        return draw_padded(size, sizes, generators, live)

    def rows(self, slots: torch.Tensor) -> dict[str, Any]:
        """The rows at ``slots`` (``(P, rows)``) of each agent's view, flattened."""
        if self._overlay is None:  # nothing stored yet (an n-step window filling up)
            return self.memory.sample_from_indices(slots.reshape(-1))
        offset = (slots - self.start) % self.max_size
        fresh = offset < min(self.written, self.max_size)
        # The turn's rows live at offset % capacity (a turn never holds more than that).
        local = offset % self.capacity
        agent = torch.arange(self.agents).unsqueeze(1).expand_as(slots)
        own = {
            name: map_tree(lambda o: o[agent.to(o.device), local.to(o.device)], self._overlay[name])
            for name in self.fields
        }
        if self.base_size:
            # Slots the turn wrote are read from the overlay; the buffer's (ignored) row
            # for them is any filled one.
            old = self.memory.sample_from_indices(torch.where(fresh, 0, slots).reshape(-1))

            def pick(mine: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
                keep = fresh.reshape(*fresh.shape, *([1] * (mine.dim() - 2))).to(mine.device)
                return torch.where(keep, mine, theirs.reshape(mine.shape))

            own = {name: map_tree(pick, own[name], old[name]) for name in self.fields}
        return {
            name: map_tree(lambda t: t.reshape(-1, *t.shape[2:]), own[name]) for name in self.fields
        }

    def journals(self) -> list[dict[str, Any]]:
        """Each agent's journal, as its own turn's :meth:`ReplayBuffer.end_turn` gives it."""
        kept = min(self.written, self.max_size)
        if kept == 0 or self._overlay is None:
            return [{"written": self.written, "rows": None} for _ in range(self.agents)]
        order = (torch.arange(self.written - kept, self.written) % self.max_size) % self.capacity
        return [
            {
                "written": self.written,
                "rows": {
                    name: map_tree(lambda store, p=p: store[p, order].cpu(), self._overlay[name])
                    for name in self.fields
                },
            }
            for p in range(self.agents)
        ]


def draw_padded(
    high: int, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
) -> torch.Tensor:
    """Rows of ``range(high)`` for every agent, ``(P, max(sizes))``: agent ``p``'s first
    ``sizes[p]`` drawn uniformly with replacement by its ``generators[p]`` (as
    ``ReplayBuffer.sample`` draws with torch's generator), only where ``live`` holds, so
    an agent draws exactly what it would draw alone. The rest are row 0: padding, which
    the cohort computes and leaves out of every loss (an agent not live is all padding).
    """
    slots = torch.zeros((len(sizes), int(max(sizes))), dtype=torch.int64)
    for p in np.flatnonzero(live).tolist():
        slots[p, : int(sizes[p])] = torch.randint(
            0, int(high), (int(sizes[p]),), generator=generators[p]
        )
    return slots


class LockstepReplay:
    """The replay of a cohort's off-policy turn (see the module docstring): uniform
    batches from each agent's view of ``memory``, with the n-step transitions of the
    same slots from its view of ``n_step_memory`` when there is one."""

    def __init__(
        self,
        memory: ReplayBuffer,
        n_step_memory: NStepReplayBuffer | None,
        agents: Sequence[Any],
        rows: int,
        max_steps: int,
    ) -> None:
        self.agents = list(agents)
        self.max_steps = int(max_steps)
        self.main = CohortReplay(memory, len(self.agents), rows)
        self.n_step: CohortReplay | None = None
        self.window: NStepWindow | None = None
        if n_step_memory is not None:
            self.n_step = CohortReplay(n_step_memory, len(self.agents), rows)
            self.window = NStepWindow(n_step_memory.n_step, n_step_memory.gamma)
        self._begin(memory)

    def _begin(self, memory: ReplayBuffer) -> None:
        """What the replay keeps of ``memory`` beside the views of its rows: nothing for
        uniform replay."""

    def __len__(self) -> int:
        """The rows each agent's view holds."""
        return len(self.main)

    def add(
        self, obs: Any, action: Any, reward: Any, next_obs: Any, terminated: Any, truncated: Any
    ) -> None:
        """Every agent's vector step (each leaf ``(P * n, ...)``, agent ``p``'s rows the
        ``p``-th block), through the n-step window first where there is one."""
        values = (obs, action, reward, next_obs, terminated, truncated)
        step: dict[str, Any] = dict(zip(STEP_FIELDS, values, strict=True))
        if self.window is None:
            self._store({name: step[name] for name in FIELDS})
            return
        matured = self.window.add(step)
        if matured is not None:
            self._store_matured(*matured)

    def end_turn(self) -> None:
        """Store what the n-step window holds back, as if every episode were truncated
        here (each agent's own turn flushes its n-step buffer the same way)."""
        if self.window is not None:
            for n_step, one_step in self.window.flush():
                self._store_matured(n_step, one_step)

    def _store_matured(self, n_step: dict[str, Any], one_step: dict[str, Any]) -> None:
        assert self.n_step is not None
        self.n_step.store(n_step)
        self._store(one_step)

    def _store(self, rows: dict[str, Any]) -> None:
        self.main.store(rows)

    def learn(
        self,
        learner: ReplayLearner,
        sizes: Sequence[int],
        generators: Sequence[torch.Generator],
        live: np.ndarray,
    ) -> list[dict[str, float] | None]:
        """One learning round of ``learner`` for the agents ``live`` names, each on a
        batch of its ``sizes[p]`` drawn by its ``generators[p]``; what each reported."""
        slots, extra = self._draw(sizes, generators, live)
        batch = {**self.main.rows(slots), **extra}
        if self.n_step is not None:
            batch["n_step"] = self.n_step.rows(slots)
        return self._learn(learner, batch, slots, live, generators)

    def _draw(
        self, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        return self.main.draw(sizes, generators, live), {}

    def _learn(
        self,
        learner: ReplayLearner,
        batch: dict[str, Any],
        slots: torch.Tensor,
        live: np.ndarray,
        generators: Sequence[torch.Generator],
    ) -> list[dict[str, float] | None]:
        return learner.learn(batch, live, generators)

    def journals(self) -> list[list[dict[str, Any]]]:
        """Each agent's journals, one per buffer (the main one, then the n-step one), as
        its own turn's would be."""
        views = [self.main] if self.n_step is None else [self.main, self.n_step]
        per_view = [self._main_journals(), *(view.journals() for view in views[1:])]
        return [list(journals) for journals in zip(*per_view, strict=True)]

    def _main_journals(self) -> list[dict[str, Any]]:
        return self.main.journals()


class LockstepPrioritizedReplay(LockstepReplay):
    """A :class:`LockstepReplay` over a prioritised buffer: each agent's own priorities
    (a copy of the buffer's sum tree for the generation), batches drawn by them with
    importance-sampling weights at the agent's annealed ``beta``, and its losses as the
    new priorities (see the module docstring)."""

    def _begin(self, memory: ReplayBuffer) -> None:
        assert isinstance(memory, PrioritizedReplayBuffer)  # LOCKSTEP_REPLAYS' entry
        self.alpha = memory.alpha
        self.trees = [memory.forked_tree() for _ in self.agents]
        self.max_priority = [memory.max_priority] * len(self.agents)
        # Per agent: the priorities it gave to pre-turn rows, in order (for its journal).
        self.old_rows: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in self.agents]

    def _beta(self, p: int) -> float:
        agent = self.agents[p]
        return annealed_beta(agent.beta, agent.steps, self.max_steps)

    def _store(self, rows: dict[str, Any]) -> None:
        slots = self.main.store(rows)
        for tree, top in zip(self.trees, self.max_priority, strict=True):
            tree.update(slots, np.full(slots.size, top) ** self.alpha)

    def _draw(
        self, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """Each live agent's ``sizes[p]`` slots drawn stratified from its own tree, and
        their weights; the rest of its block (and a block not live) is slot 0 with weight
        0: padding, which no loss reads."""
        width = int(max(sizes))
        slots = np.zeros((len(sizes), width), dtype=np.int64)
        weights = np.zeros((len(sizes), width))
        for p in np.flatnonzero(live).tolist():
            size = int(sizes[p])
            slots[p, :size], weights[p, :size] = stratified_draw(
                self.trees[p], size, self._beta(p), generators[p]
            )
        device = self.main.memory.device
        return torch.from_numpy(slots), {
            "weights": torch.as_tensor(weights.reshape(-1), dtype=torch.float32, device=device)
        }

    def _learn(
        self,
        learner: ReplayLearner,
        batch: dict[str, Any],
        slots: torch.Tensor,
        live: np.ndarray,
        generators: Sequence[torch.Generator],
    ) -> list[dict[str, float] | None]:
        # A prioritised buffer serves only learners of priorities (the run checks each
        # agent: Replay.check).
        prioritized = cast(PrioritizedLearner, learner)
        figures, losses = prioritized.learn_prioritized(batch, live, generators)
        losses = losses.cpu().double().numpy().reshape(len(self.agents), -1)
        for p in np.flatnonzero(live).tolist():
            size = int(self.agents[p].batch_size)
            self._update(p, slots[p, :size].numpy(), losses[p, :size])
            figures[p] = {**(figures[p] or {}), "beta": self._beta(p)}
        return figures

    def _update(self, p: int, slots: np.ndarray, losses: np.ndarray) -> None:
        """Agent ``p``'s :meth:`~agilerl.components.prioritized_replay.
        PrioritizedReplayBuffer.update_priorities`, on its own tree."""
        values = priorities_of(losses, self.agents[p].prior_eps)
        old = ~self.main.fresh(slots)
        self.old_rows[p].append((slots[old], values[old]))
        self.trees[p].update(slots, values**self.alpha)
        if values.size:
            self.max_priority[p] = max(self.max_priority[p], float(values.max()))

    def _main_journals(self) -> list[dict[str, Any]]:
        journals = []
        for p, journal in enumerate(self.main.journals()):
            updates = self.old_rows[p]
            slots = np.concatenate([np.zeros(0, np.int64), *(s for s, _ in updates)])
            values = np.concatenate([np.zeros(0), *(v for _, v in updates)])
            slots, values = last_occurrence(slots, values)
            journals.append(
                {
                    **journal,
                    "old_rows": {"slots": slots, "priorities": values},
                    "max_priority": self.max_priority[p],
                }
            )
        return journals


#: Main buffer class -> the cohort replay that serves it (exact classes, as
#: :data:`~agilerl.components.replay.REPLAYS` serves a single agent).
LOCKSTEP_REPLAYS: dict[type, type[LockstepReplay]] = {
    ReplayBuffer: LockstepReplay,
    PrioritizedReplayBuffer: LockstepPrioritizedReplay,
}
