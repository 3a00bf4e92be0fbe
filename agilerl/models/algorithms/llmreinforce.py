"""LLMREINFORCE's spec, generated from ``schemas/llm_reinforce.schema.json``; registered as ``LLMREINFORCE``."""

from agilerl._generated.llm_reinforce_schema import LLMREINFORCESpec
from agilerl.models.registry import register

register()(LLMREINFORCESpec)

__all__ = ["LLMREINFORCESpec"]
