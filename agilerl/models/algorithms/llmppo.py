"""LLMPPO's spec, generated from ``schemas/llm_ppo.schema.json``; registered as ``LLMPPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.llm_ppo_schema import LLMPPOSpec
else:
    from agilerl._generated.llm_ppo_schema import LLMPPOSpec

register()(LLMPPOSpec)

__all__ = ["LLMPPOSpec"]
