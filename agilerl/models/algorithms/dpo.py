"""DPO's spec, generated from ``schemas/dpo.schema.json``; registered as ``DPO``."""

from agilerl._generated.dpo_schema import DPOSpec
from agilerl.models.registry import register

register()(DPOSpec)

__all__ = ["DPOSpec"]
