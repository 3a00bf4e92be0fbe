"""Concrete algorithm specs, registered in :data:`agilerl.models.algo.ALGO_REGISTRY`.

Their fields and algorithm facts (agent type, training loop) come from ``schemas/``.
"""

from agilerl._generated.dqn_schema import DQNSpec
from agilerl._generated.ppo_schema import PPOSpec
from agilerl.models.registry import register

for _spec in (DQNSpec, PPOSpec):
    register()(_spec)

__all__ = ["DQNSpec", "PPOSpec"]
