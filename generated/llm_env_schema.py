# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any, Literal

from agilerl.models.base import SpecBase
from agilerl.models.env_base import LLMEnvBase
from pydantic import ConfigDict, Field, StringConstraints
from typing_extensions import TypeAliasType

from . import gym_env_schema

Dataset = TypeAliasType(
    "Dataset",
    Annotated[
        str,
        Field(
            description='The dataset: a local .jsonl, .json, .csv, .parquet or .pq file or a directory of them (relative to the manifest), or a Hugging Face hub dataset id (org/name) whose train split is loaded through the datasets cache, with downloads off under HF_DATASETS_OFFLINE or HF_HUB_OFFLINE. Required by the reasoning, preference and sft environments; null for a multi-turn one.',
            examples=['data/countdown.parquet'],
            min_length=1,
        ),
    ],
)


RewardFilePath = TypeAliasType(
    "RewardFilePath",
    Annotated[
        str,
        Field(
            description='Local Python file defining the reward function. Required by a reasoning environment; preference and sft environments have none.',
            examples=['reward.py'],
            min_length=1,
        ),
    ],
)


RewardFnName = TypeAliasType(
    "RewardFnName",
    Annotated[
        str,
        Field(
            description='Name of the reward function in `reward_file_path`. Required by a reasoning environment.',
            examples=['combined_rewards'],
            pattern='^[A-Za-z_][A-Za-z0-9_]*$',
        ),
    ],
)


EnvName = TypeAliasType(
    "EnvName",
    Annotated[
        str,
        Field(
            description="A multi-turn environment's registered id (a GEM id such as `game:GuessTheNumber-v0-easy`); give it or `entrypoint`. GEM's games need the gem-llm package and its assets: every run refuses a GEM id before its first step (name a Python class with `entrypoint` instead).",
            examples=['game:GuessTheNumber-v0-easy'],
            min_length=1,
        ),
    ],
)


MaxTurns = TypeAliasType(
    "MaxTurns",
    Annotated[
        int,
        Field(
            description="Most turns of a multi-turn episode; null: the environment's own limit.",
            ge=1,
        ),
    ],
)


class LLMEnvFields(LLMEnvBase):
    """
    Fields of an LLM environment specification. Not a document of its own: LLMEnvSpec and the per-algorithm sections close it, each with its `env_type` and the rules.
    """

    dataset: Annotated[
        Dataset | None,
        Field(
            description='The dataset: a local .jsonl, .json, .csv, .parquet or .pq file or a directory of them (relative to the manifest), or a Hugging Face hub dataset id (org/name) whose train split is loaded through the datasets cache, with downloads off under HF_DATASETS_OFFLINE or HF_HUB_OFFLINE. Required by the reasoning, preference and sft environments; null for a multi-turn one.',
            examples=['data/countdown.parquet'],
        ),
    ] = None
    columns: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r'^')], str] | None,
        Field(
            description='Renames dataset columns (dataset name -> name the environment expects); null to keep them.',
            examples=[{'nums': 'question', 'target': 'answer'}],
        ),
    ] = None
    prompt_template: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r'^')], str] | None,
        Field(
            description='Chat template: message keys `<role>_<position>` (`system_0`, `user_1`, `assistant_2`) mapped to their text, which may use dataset columns as `{column}` placeholders. Required by a reasoning environment.',
            examples=[{'system_0': 'You are a helpful assistant.', 'user_1': 'Solve {question}.', 'assistant_2': 'Let me solve this step by step.\n<think>'}],
        ),
    ] = None
    max_reward: Annotated[
        float | None,
        Field(
            description='Highest reward a completion can get (used to report accuracy and stop early); null if unknown.'
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
    reward_file_path: Annotated[
        RewardFilePath | None,
        Field(
            description='Local Python file defining the reward function. Required by a reasoning environment; preference and sft environments have none.',
            examples=['reward.py'],
        ),
    ] = None
    reward_fn_name: Annotated[
        RewardFnName | None,
        Field(
            description='Name of the reward function in `reward_file_path`. Required by a reasoning environment.',
            examples=['combined_rewards'],
        ),
    ] = None
    response_column: Annotated[
        str, Field(description='Dataset column holding the target response (sft).', min_length=1)
    ] = 'response'
    env_name: Annotated[
        EnvName | None,
        Field(
            description="A multi-turn environment's registered id (a GEM id such as `game:GuessTheNumber-v0-easy`); give it or `entrypoint`. GEM's games need the gem-llm package and its assets: every run refuses a GEM id before its first step (name a Python class with `entrypoint` instead).",
            examples=['game:GuessTheNumber-v0-easy'],
        ),
    ] = None
    entrypoint: Annotated[
        gym_env_schema.Entrypoint | None,
        Field(
            description='A class or factory building a multi-turn environment (`pkg.mod:Name` or `file.py:Name`, relative to the manifest; called with `env_config` as keyword arguments) instead of `env_name`: reset(seed) -> (observation, info), step(text) -> (observation, reward, terminated, truncated, info), max_turns, optional system_prompt.'
        ),
    ] = None
    env_config: Annotated[
        dict[str, Any] | None,
        Field(description='Keyword arguments for `entrypoint`; only with it; null for none.'),
    ] = None
    max_turns: Annotated[
        MaxTurns | None,
        Field(description="Most turns of a multi-turn episode; null: the environment's own limit."),
    ] = None
    strict_chat_template_boundary: Annotated[
        bool,
        Field(
            description="Multi-turn: check that the chat template renders each turn's prompt as a prefix of the next (so turns tokenize the same in both)."
        ),
    ] = True


class LLMEnvSpec(LLMEnvFields):
    """
    An LLM environment, AgileRL's `LLMEnvSpec`: `env_type` says which, and the rules say what each needs (reasoning: a dataset, a reward function and a chat template; preference and sft: a dataset; multiturn: `env_name` or `entrypoint`). A manifest's environment section is one of the per-algorithm sections below, whose `env_type` defaults to the algorithm's. This file also holds the fields every LLM environment shares (`$defs/LLMEnvFields`).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    env_type: Annotated[
        Literal['reasoning', 'preference', 'sft', 'multiturn'],
        Field(
            description='Which LLM environment: `reasoning` (prompts scored by a reward function), `preference` (chosen and rejected responses), `sft` (prompt and target response) or `multiturn` (a multi-turn text environment, a Python class or factory named by `entrypoint`; a GEM `env_name` validates but every run refuses it).'
        ),
    ]
