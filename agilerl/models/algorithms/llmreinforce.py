"""LLMREINFORCE's spec, generated from ``schemas/llm_reinforce.schema.json``; registered as ``LLMREINFORCE``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.llm_reinforce_schema import LLMREINFORCESpec
else:
    from agilerl._generated.llm_reinforce_schema import LLMREINFORCESpec

register()(LLMREINFORCESpec)

__all__ = ["LLMREINFORCESpec"]
