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
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'dataset', 'requiredWhen': {'env_type': ['reasoning']}}, {'field': 'reward_file_path', 'requiredWhen': {'env_type': ['reasoning']}}, {'field': 'reward_fn_name', 'requiredWhen': {'env_type': ['reasoning']}}, {'field': 'prompt_template', 'requiredWhen': {'env_type': ['reasoning']}}, {'field': 'env_name', 'requiredWhen': {'env_type': ['multiturn'], 'entrypoint': [None]}}, {'exclusive': ['env_name', 'entrypoint']}, {'field': 'env_config', 'forbiddenWhen': {'entrypoint': [None]}, 'because': "env_config holds the entry point's keyword arguments"}]
        },
    )
    env_type: Annotated[
        Literal['reasoning', 'multiturn'],
        Field(
            description="Which LLM environment: `reasoning`, `multiturn`; by default the algorithm's, `reasoning`."
        ),
    ] = 'reasoning'
