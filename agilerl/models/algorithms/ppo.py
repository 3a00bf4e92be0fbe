"""PPO's spec, generated from ``schemas/ppo.schema.json``; registered as ``PPO``."""

from agilerl._generated.ppo_schema import PPOSpec
from agilerl.models.registry import register

register()(PPOSpec)

__all__ = ["PPOSpec"]
