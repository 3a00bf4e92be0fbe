"""Training and replay buffer specifications.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from agilerl._generated.replay_buffer_schema import (
    NStepBufferArgs,
    PerBufferArgs,
    ReplayBufferSpec,
)
from agilerl._generated.training_schema import TrainingSpec, WandbConfig

__all__ = [
    "NStepBufferArgs",
    "PerBufferArgs",
    "ReplayBufferSpec",
    "TrainingSpec",
    "WandbConfig",
]
