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
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'dataset', 'requiredWhen': {'env_type': ['sft']}}, {'field': 'reward_file_path', 'forbiddenWhen': {'env_type': ['sft']}, 'because': 'only a reasoning environment scores completions with a reward function'}, {'field': 'reward_fn_name', 'forbiddenWhen': {'env_type': ['sft']}, 'because': 'only a reasoning environment scores completions with a reward function'}, {'field': 'prompt_template', 'forbiddenWhen': {'env_type': ['sft']}, 'because': "preference and sft environments render each row's own prompt"}, {'exclusive': ['env_name', 'entrypoint']}, {'field': 'env_config', 'forbiddenWhen': {'entrypoint': [None]}, 'because': "env_config holds the entry point's keyword arguments"}]
        },
    )
    env_type: Annotated[
        Literal['sft'],
        Field(description="Which LLM environment: `sft`; by default the algorithm's, `sft`."),
    ] = 'sft'
