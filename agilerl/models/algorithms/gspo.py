"""GSPO's spec, generated from ``schemas/gspo.schema.json``; registered as ``GSPO``."""

from agilerl._generated.gspo_schema import GSPOSpec
from agilerl.models.registry import register

register()(GSPOSpec)

__all__ = ["GSPOSpec"]
