"""IPPO's spec, generated from ``schemas/ippo.schema.json``; registered as ``IPPO``."""

from agilerl._generated.ippo_schema import IPPOSpec
from agilerl.models.registry import register

register()(IPPOSpec)

__all__ = ["IPPOSpec"]
