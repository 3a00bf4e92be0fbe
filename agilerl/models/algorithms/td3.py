"""TD3's spec, generated from ``schemas/td3.schema.json``; registered as ``TD3``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.td3_schema import TD3Spec
else:
    from agilerl._generated.td3_schema import TD3Spec

register()(TD3Spec)

__all__ = ["TD3Spec"]
