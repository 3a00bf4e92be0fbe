"""The memory of pulls (agilerl/families/bandits/memory.py): the pulled arm's context and
the reward it paid, the last ``max_size`` of them, read back as a replay buffer's rows."""

from __future__ import annotations

import numpy as np
import torch

from agilerl.families.bandits.memory import BanditMemory


def _pulls(memory, n, dim=3, start=0):
    for i in range(start, start + n):
        memory.add_pull(np.full(dim, float(i), dtype=np.float32), float(i) / 10)


def test_a_pull_is_its_context_and_its_reward_and_nothing_else():
    memory = BanditMemory(8)
    assert set(memory.fields) == {"context", "reward"}
    _pulls(memory, 3)
    assert len(memory) == 3
    rows = memory.sample_from_indices(torch.arange(3))
    assert set(rows) == {"context", "reward"}
    assert rows["context"].tolist() == [[0.0] * 3, [1.0] * 3, [2.0] * 3]
    assert torch.allclose(rows["reward"].flatten(), torch.tensor([0.0, 0.1, 0.2]))


def test_only_the_last_max_size_pulls_are_kept():
    memory = BanditMemory(4)
    _pulls(memory, 10)
    assert len(memory) == 4
    kept = sorted(row[0] for row in memory.sample_from_indices(torch.arange(4))["context"].tolist())
    assert kept == [6.0, 7.0, 8.0, 9.0]


def test_a_batch_is_drawn_from_the_pulls_held():
    memory = BanditMemory(16)
    _pulls(memory, 5, dim=2)
    batch = memory.sample(32)
    assert batch["context"].shape == (32, 2)
    assert set(batch["context"][:, 0].tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    rewards = batch["reward"].flatten()
    assert torch.allclose(rewards, batch["context"][:, 0] / 10)  # each row's own reward
