"""MADDPG's spec, generated from ``schemas/maddpg.schema.json``; registered as ``MADDPG``."""

from agilerl._generated.maddpg_schema import MADDPGSpec
from agilerl.models.registry import register

register()(MADDPGSpec)

__all__ = ["MADDPGSpec"]
