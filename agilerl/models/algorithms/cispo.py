"""CISPO's spec, generated from ``schemas/cispo.schema.json``; registered as ``CISPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.cispo_schema import CISPOSpec
else:
    from agilerl._generated.cispo_schema import CISPOSpec

register()(CISPOSpec)

__all__ = ["CISPOSpec"]
