"""GRPO's spec, generated from ``schemas/grpo.schema.json``; registered as ``GRPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.grpo_schema import GRPOSpec
else:
    from agilerl._generated.grpo_schema import GRPOSpec

register()(GRPOSpec)

__all__ = ["GRPOSpec"]
