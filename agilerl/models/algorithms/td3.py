"""TD3's spec, generated from ``schemas/td3.schema.json``; registered as ``TD3``."""

from agilerl._generated.td3_schema import TD3Spec
from agilerl.models.registry import register

register()(TD3Spec)

__all__ = ["TD3Spec"]
