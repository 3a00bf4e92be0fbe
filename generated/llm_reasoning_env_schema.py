# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_env_schema import LLMEnvFields


class LLMReasoningEnvSpec(LLMEnvFields):
    """
    The environment section of a reasoning LLM algorithm (GRPO and friends): an LLMEnvSpec whose `env_type` defaults to `reasoning`. `multiturn`: a multi-turn text environment named by `entrypoint` (a GEM `env_name` validates, but every run refuses it).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[
        Literal['reasoning', 'multiturn'],
        Field(
            description="Which LLM environment: `reasoning`, `multiturn`; by default the algorithm's, `reasoning`."
        ),
    ] = 'reasoning'
