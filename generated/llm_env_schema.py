# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field, StringConstraints


class LLMEnvFields(SpecBase):
    """
    Fields shared by every LLM environment specification. Not a document of its own: each LLM environment spec closes it.
    """

    dataset: Annotated[
        str,
        Field(
            description='The dataset: a local .jsonl, .json, .csv, .parquet or .pq file or a directory of them (relative to the manifest), or a Hugging Face hub dataset id (org/name) whose train split is loaded through the datasets cache, with downloads off under HF_DATASETS_OFFLINE or HF_HUB_OFFLINE.',
            examples=['data/countdown.parquet'],
            min_length=1,
        ),
    ]
    columns: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r'^')], str] | None,
        Field(
            description='Renames dataset columns (dataset name -> name the environment expects); null to keep them.',
            examples=[{'nums': 'question', 'target': 'answer'}],
        ),
    ] = None
    train_test_split: Annotated[
        float,
        Field(
            description='Fraction of the dataset used for training; the rest is the test split.',
            gt=0.0,
            le=1.0,
        ),
    ] = 0.9


class LLMReasoningEnvSpec(LLMEnvFields):
    """
    An LLM reasoning environment (GRPO and friends): prompts from a local dataset, rendered with a chat template, scored by a reward function from a Python file. This file also holds the fields every LLM environment shares (`$defs/LLMEnvFields`).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[Literal['reasoning'], Field(description='Environment type tag.')] = (
        'reasoning'
    )
    prompt_template: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r'^')], str],
        Field(
            description='Chat template: message keys `<role>_<position>` (`system_0`, `user_1`, `assistant_2`) mapped to their text, which may use dataset columns as `{column}` placeholders.',
            examples=[{'system_0': 'You are a helpful assistant.', 'user_1': 'Solve {question}.', 'assistant_2': 'Let me solve this step by step.\n<think>'}],
        ),
    ]
    reward_file_path: Annotated[
        str,
        Field(
            description='Local Python file defining the reward function.',
            examples=['reward.py'],
            min_length=1,
        ),
    ]
    reward_fn_name: Annotated[
        str,
        Field(
            description='Name of the reward function in `reward_file_path`.',
            examples=['combined_rewards'],
            pattern='^[A-Za-z_][A-Za-z0-9_]*$',
        ),
    ]
    max_reward: Annotated[
        float | None,
        Field(
            description='Highest reward a completion can get (used to report accuracy and stop early); null if unknown.'
        ),
    ] = None
