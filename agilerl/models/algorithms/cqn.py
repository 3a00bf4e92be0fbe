"""CQN's spec, generated from ``schemas/cqn.schema.json``; registered as ``CQN``."""

from agilerl._generated.cqn_schema import CQNSpec
from agilerl.models.registry import register

register()(CQNSpec)

__all__ = ["CQNSpec"]
