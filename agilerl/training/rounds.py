"""When an off-policy agent learns during its turn: every ``learn_step`` of its
environment steps, counted from the turn's start, once the buffer can serve its batches.

The count runs from the turn's start whether or not the agent can learn yet, and the
rounds that fall before it can are skipped (no backlog builds up). So agents of equal
``learn_step`` that step together learn at the same steps, whatever their batch sizes
or when each became ready: a cohort's rounds stay whole after HPO changes a batch size,
rather than splitting into rounds of fewer agents each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class LearningRounds:
    """The learning calls due after each vector step of ``agents`` (one agent alone, or
    a cohort's, each stepping ``per_step`` environments): an agent learns once the
    buffer (its view) holds a batch (``batch_size`` rows) and more than
    ``learning_delay`` rows, every ``learn_step`` of its env steps (module docstring)."""

    def __init__(self, agents: Sequence[Any], per_step: int, learning_delay: int) -> None:
        self.per_step = int(per_step)
        self.learning_delay = int(learning_delay)
        self.learn_step = np.array([int(agent.learn_step) for agent in agents])
        self.batch_size = np.array([int(agent.batch_size) for agent in agents])
        self.pending = np.zeros(len(agents), dtype=np.int64)

    def learning(self, rows: int) -> np.ndarray:
        """Which agents learn from a buffer of ``rows`` rows."""
        return (rows >= self.batch_size) & (rows > self.learning_delay)

    def after_step(self, rows: int) -> list[np.ndarray]:
        """The rounds due after a vector step, with the buffer at ``rows`` rows: each the
        mask of the agents that learn in it (agents due more often learn in more)."""
        self.pending += self.per_step
        due = self.pending // self.learn_step
        self.pending -= due * self.learn_step
        due = np.where(self.learning(rows), due, 0)  # skipped, not kept, before it can
        return [due > round_ for round_ in range(int(due.max(initial=0)))]
