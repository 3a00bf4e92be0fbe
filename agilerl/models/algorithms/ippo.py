"""IPPO's spec, generated from ``schemas/ippo.schema.json``; registered as ``IPPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.ippo_schema import IPPOSpec
else:
    from agilerl._generated.ippo_schema import IPPOSpec

register()(IPPOSpec)

__all__ = ["IPPOSpec"]
