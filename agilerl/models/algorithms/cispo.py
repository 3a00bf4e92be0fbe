"""CISPO's spec, generated from ``schemas/cispo.schema.json``; registered as ``CISPO``."""

from agilerl._generated.cispo_schema import CISPOSpec
from agilerl.models.registry import register

register()(CISPOSpec)

__all__ = ["CISPOSpec"]
