# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_env_schema import LLMEnvFields


class LLMPreferenceEnvSpec(LLMEnvFields):
    """
    An LLM preference environment (DPO): prompts with a chosen and a rejected response from a local dataset.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[Literal['preference'], Field(description='Environment type tag.')] = (
        'preference'
    )
