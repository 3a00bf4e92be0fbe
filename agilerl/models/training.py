"""Training and replay buffer specifications.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.replay_buffer_schema import (
        NStepBufferArgs,
        PerBufferArgs,
        ReplayBufferSpec,
    )
    from generated.training_schema import TrainingSpec, WandbConfig
else:
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
