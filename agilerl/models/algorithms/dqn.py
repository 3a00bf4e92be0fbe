"""DQN's spec, generated from ``schemas/dqn.schema.json``; registered as ``DQN``."""

from agilerl._generated.dqn_schema import DQNSpec
from agilerl.models.registry import register

register()(DQNSpec)

__all__ = ["DQNSpec"]
