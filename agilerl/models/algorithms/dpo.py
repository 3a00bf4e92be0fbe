"""DPO's spec, generated from ``schemas/dpo.schema.json``; registered as ``DPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.dpo_schema import DPOSpec
else:
    from agilerl._generated.dpo_schema import DPOSpec

register()(DPOSpec)

__all__ = ["DPOSpec"]
