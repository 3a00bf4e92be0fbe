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

Uniform replay only: prioritised replay keeps one sum tree per buffer, and an n-step
buffer holds back per-episode state; those agents train one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agilerl.components.replay_buffer import FIELDS, ReplayBuffer, _as_tensor
from agilerl.observations import map_tree, tree_leaves


class CohortReplay:
    """``agents`` views of ``memory`` for a generation in which each stores at most
    ``rows`` transitions (see the module docstring)."""

    def __init__(self, memory: ReplayBuffer, agents: int, rows: int) -> None:
        if type(memory) is not ReplayBuffer:
            raise TypeError(f"a cohort shares a uniform ReplayBuffer, not {type(memory).__name__}")
        self.memory = memory
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

    def add(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any) -> None:
        """One vector step of every agent: each leaf ``(P * n, ...)``, agent ``p``'s rows the
        ``p``-th block."""

        def blocks(leaf: Any) -> torch.Tensor:
            tensor = _as_tensor(leaf)
            return tensor.reshape(self.agents, -1, *tensor.shape[1:])

        values = (obs, action, reward, next_obs, done)
        batch = {name: map_tree(blocks, value) for name, value in zip(FIELDS, values, strict=True)}
        count = int(tree_leaves(batch["obs"])[0].shape[1])
        if count > self.capacity:
            raise ValueError(f"a step of {count} rows per agent exceeds the view's {self.capacity}")
        if self._overlay is None:
            device = self.memory.device

            def empty(leaf: torch.Tensor) -> torch.Tensor:
                return torch.empty(
                    (self.agents, self.capacity, *leaf.shape[2:]), dtype=leaf.dtype, device=device
                )

            self._overlay = {name: map_tree(empty, batch[name]) for name in FIELDS}
        offsets = (self.written + torch.arange(count)) % self.max_size % self.capacity

        def write(store: torch.Tensor, data: torch.Tensor) -> None:
            store[:, offsets.to(store.device)] = data.to(store.device, store.dtype)

        for name in FIELDS:
            map_tree(write, self._overlay[name], batch[name])
        self.written += count

    def sample(
        self, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
    ) -> dict[str, Any]:
        """The rows of :meth:`draw`'s slots: each leaf ``(P * max(sizes), ...)``, agent
        ``p``'s rows the ``p``-th block (its first ``sizes[p]`` its own draws)."""
        return self.rows(self.draw(sizes, generators, live))

    def draw(
        self, sizes: Sequence[int], generators: Sequence[torch.Generator], live: np.ndarray
    ) -> torch.Tensor:
        """Slots of every agent's view, ``(P, max(sizes))``: :func:`draw_padded` over the
        view's rows, so an agent draws exactly what it would draw alone."""
        size = len(self)
        if size == 0 or self._overlay is None:
            raise ValueError("cannot sample from an empty replay buffer")
        return draw_padded(size, sizes, generators, live)

    def rows(self, slots: torch.Tensor) -> dict[str, Any]:
        """The rows at ``slots`` (``(P, rows)``) of each agent's view, flattened."""
        assert self._overlay is not None
        offset = (slots - self.start) % self.max_size
        fresh = offset < min(self.written, self.max_size)
        # The turn's rows live at offset % capacity (a turn never holds more than that).
        local = offset % self.capacity
        agent = torch.arange(self.agents).unsqueeze(1).expand_as(slots)
        own = {
            name: map_tree(lambda o: o[agent.to(o.device), local.to(o.device)], self._overlay[name])
            for name in FIELDS
        }
        if self.base_size:
            # Slots the turn wrote are read from the overlay; the buffer's (ignored) row
            # for them is any filled one.
            old = self.memory.sample_from_indices(torch.where(fresh, 0, slots).reshape(-1))

            def pick(mine: torch.Tensor, theirs: torch.Tensor) -> torch.Tensor:
                keep = fresh.reshape(*fresh.shape, *([1] * (mine.dim() - 2))).to(mine.device)
                return torch.where(keep, mine, theirs.reshape(mine.shape))

            own = {name: map_tree(pick, own[name], old[name]) for name in FIELDS}
        return {name: map_tree(lambda t: t.reshape(-1, *t.shape[2:]), own[name]) for name in FIELDS}

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
                    for name in FIELDS
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
