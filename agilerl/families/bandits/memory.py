"""``BanditMemory``: the pulls a bandit population learns from (shared by its agents)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from agilerl.components.replay_buffer import ReplayBuffer


class BanditMemory(ReplayBuffer):
    """The last ``max_size`` pulls: the pulled arm's context and the reward it paid
    (a bandit step has no next state). Sampled and checkpointed as a replay buffer."""

    fields: ClassVar[tuple[str, ...]] = ("context", "reward")

    def add_pull(self, context: Any, reward: float) -> None:
        """Store one pull (``context`` ``(D,)``)."""
        self.store({"context": context[None], "reward": np.array([reward], dtype=np.float32)})
