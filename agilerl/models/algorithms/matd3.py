"""MATD3's spec, generated from ``schemas/matd3.schema.json``; registered as ``MATD3``."""

from agilerl._generated.matd3_schema import MATD3Spec
from agilerl.models.registry import register

register()(MATD3Spec)

__all__ = ["MATD3Spec"]
