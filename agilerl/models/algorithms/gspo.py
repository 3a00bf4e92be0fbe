"""GSPO's spec, generated from ``schemas/gspo.schema.json``; registered as ``GSPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.gspo_schema import GSPOSpec
else:
    from agilerl._generated.gspo_schema import GSPOSpec

register()(GSPOSpec)

__all__ = ["GSPOSpec"]
