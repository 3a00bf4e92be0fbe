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
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'dataset', 'requiredWhen': {'env_type': ['preference']}}, {'field': 'reward_file_path', 'forbiddenWhen': {'env_type': ['preference']}, 'because': 'only a reasoning environment scores completions with a reward function'}, {'field': 'reward_fn_name', 'forbiddenWhen': {'env_type': ['preference']}, 'because': 'only a reasoning environment scores completions with a reward function'}, {'field': 'prompt_template', 'forbiddenWhen': {'env_type': ['preference']}, 'because': "preference and sft environments render each row's own prompt"}, {'exclusive': ['env_name', 'entrypoint']}, {'field': 'env_config', 'forbiddenWhen': {'entrypoint': [None]}, 'because': "env_config holds the entry point's keyword arguments"}]
        },
    )
    env_type: Annotated[
        Literal['preference'],
        Field(
            description="Which LLM environment: `preference`; by default the algorithm's, `preference`."
        ),
    ] = 'preference'
