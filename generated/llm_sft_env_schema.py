# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_env_schema import LLMEnvFields


class LLMSftEnvSpec(LLMEnvFields):
    """
    The environment section of supervised fine-tuning (SFT): an LLMEnvSpec whose `env_type` is `sft`: prompts with a target response.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[
        Literal['sft'],
        Field(description="Which LLM environment: `sft`; by default the algorithm's, `sft`."),
    ] = 'sft'
