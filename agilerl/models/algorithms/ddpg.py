"""DDPG's spec, generated from ``schemas/ddpg.schema.json``; registered as ``DDPG``."""

from agilerl._generated.ddpg_schema import DDPGSpec
from agilerl.models.registry import register

register()(DDPGSpec)

__all__ = ["DDPGSpec"]
