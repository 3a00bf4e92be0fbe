"""SFT's spec, generated from ``schemas/sft.schema.json``; registered as ``SFT``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.sft_schema import SFTSpec
else:
    from agilerl._generated.sft_schema import SFTSpec

register()(SFTSpec)

__all__ = ["SFTSpec"]
