"""Random replay batches for tests and benchmarks of learners: transitions of a Box
observation and a Discrete action, drawn from a given generator."""

from __future__ import annotations

import torch


def random_transitions(
    rows: int,
    generator: torch.Generator,
    *,
    obs_dim: int = 4,
    actions: int = 3,
    done_rate: float = 0.2,
) -> dict[str, torch.Tensor]:
    """``rows`` transitions keyed as a replay buffer's batch: observations uniform in
    ``[-1, 1)``, actions uniform over ``actions``, standard normal rewards, ``done`` (as
    floats) with probability ``done_rate``."""
    return {
        "obs": torch.rand(rows, obs_dim, generator=generator) * 2 - 1,
        "action": torch.randint(0, actions, (rows,), generator=generator),
        "reward": torch.randn(rows, generator=generator),
        "next_obs": torch.rand(rows, obs_dim, generator=generator) * 2 - 1,
        "done": (torch.rand(rows, generator=generator) < done_rate).float(),
    }
