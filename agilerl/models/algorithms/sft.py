"""SFT's spec, generated from ``schemas/sft.schema.json``; registered as ``SFT``."""

from agilerl._generated.sft_schema import SFTSpec
from agilerl.models.registry import register

register()(SFTSpec)

__all__ = ["SFTSpec"]
