# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_env_schema import LLMEnvFields


class LLMSftEnvSpec(LLMEnvFields):
    """
    An LLM supervised fine-tuning environment: prompts with a target response from a local dataset.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[Literal['sft'], Field(description='Environment type tag.')] = 'sft'
    response_column: Annotated[
        str, Field(description='Dataset column holding the target response.', min_length=1)
    ] = 'response'
