"""MATD3's spec, generated from ``schemas/matd3.schema.json``; registered as ``MATD3``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.matd3_schema import MATD3Spec
else:
    from agilerl._generated.matd3_schema import MATD3Spec

register()(MATD3Spec)

__all__ = ["MATD3Spec"]
