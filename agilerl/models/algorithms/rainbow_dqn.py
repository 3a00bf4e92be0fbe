"""Rainbow DQN's spec, generated from ``schemas/rainbow_dqn.schema.json``; registered as ``RainbowDQN``."""

from agilerl._generated.rainbow_dqn_schema import RainbowDQNSpec
from agilerl.models.registry import register

register()(RainbowDQNSpec)

__all__ = ["RainbowDQNSpec"]
