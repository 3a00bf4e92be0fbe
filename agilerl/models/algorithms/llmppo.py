"""LLMPPO's spec, generated from ``schemas/llm_ppo.schema.json``; registered as ``LLMPPO``."""

from agilerl._generated.llm_ppo_schema import LLMPPOSpec
from agilerl.models.registry import register

register()(LLMPPOSpec)

__all__ = ["LLMPPOSpec"]
