"""GRPO's spec, generated from ``schemas/grpo.schema.json``; registered as ``GRPO``."""

from agilerl._generated.grpo_schema import GRPOSpec
from agilerl.models.registry import register

register()(GRPOSpec)

__all__ = ["GRPOSpec"]
