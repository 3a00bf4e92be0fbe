# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_env_schema import LLMEnvFields


class LLMPreferenceEnvSpec(LLMEnvFields):
    """
    The environment section of a preference LLM algorithm (DPO): an LLMEnvSpec whose `env_type` is `preference`: prompts with a chosen and a rejected response.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[
        Literal['preference'],
        Field(
            description="Which LLM environment: `preference`; by default the algorithm's, `preference`."
        ),
    ] = 'preference'
