"""When the agents of a cohort learn in an off-policy turn: each every ``learn_step`` of
its own environment steps, once its view of the buffer can serve its batches, as its own
turn would."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class LearningRounds:
    """The learning calls due after each vector step of a cohort's ``agents`` (each
    stepping ``per_step`` environments): an agent learns once its view holds a batch
    (``batch_size`` rows) and more than ``learning_delay`` rows, every ``learn_step``
    of its env steps since then; no backlog builds up before it starts."""

    def __init__(self, agents: Sequence[Any], per_step: int, learning_delay: int) -> None:
        self.per_step = int(per_step)
        self.learning_delay = int(learning_delay)
        self.learn_step = np.array([agent.learn_step for agent in agents])
        self.batch_size = np.array([agent.batch_size for agent in agents])
        self.pending = np.zeros(len(agents), dtype=np.int64)

    def learning(self, rows: int) -> np.ndarray:
        """Which agents learn from a view of ``rows`` rows."""
        return (rows >= self.batch_size) & (rows > self.learning_delay)

    def after_step(self, rows: int) -> list[np.ndarray]:
        """The rounds due after a vector step, with the view at ``rows`` rows: each the
        mask of the agents that learn in it (agents due more often learn in more)."""
        ready = self.learning(rows)
        self.pending = np.where(ready, self.pending + self.per_step, 0)
        due = np.where(ready, self.pending // self.learn_step, 0)
        self.pending -= due * self.learn_step
        return [due > round_ for round_ in range(int(due.max(initial=0)))]
