# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import SpecBase
from agilerl.models.env_base import BanditEnvBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from . import gym_env_schema

Path = TypeAliasType(
    "Path",
    Annotated[
        str,
        Field(
            description="Directory the entry point's file or module is resolved from; a relative one starts at the manifest's folder. null: the manifest's folder for a file, or for a module only that folder holds; a run records the absolute folder it used.",
            min_length=1,
        ),
    ],
)


TablePath = TypeAliasType(
    "TablePath",
    Annotated[
        str,
        Field(
            description='Path of a local .csv, .parquet or .pq file.',
            pattern='\\.(csv|parquet|pq)$',
            title='TablePath',
        ),
    ],
)


class BanditEnvSpec(BanditEnvBase):
    """
    A contextual bandit environment built from a labelled tabular dataset: each row of `features` is a context, its row of `targets` the correct arm. The table comes from two local files (`features`, `targets`) or from an `entrypoint` that returns the bandit.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    name: Annotated[
        str,
        Field(description='Label of the environment (used in logs and checkpoints).', min_length=1),
    ] = 'BanditEnv'
    features: Annotated[
        TablePath | None,
        Field(
            description='Local table of context features, one row per sample (.csv, .parquet or .pq). A manifest names both tables or an `entrypoint`; null where the bandit comes from an entry point or is given in Python (`LocalTrainer(..., env=BanditEnv(features, targets))`).',
            examples=['data/iris_features.csv'],
        ),
    ] = None
    targets: Annotated[
        TablePath | None,
        Field(
            description='Local table of target labels, one row per row of `features` (.csv, .parquet or .pq). A manifest names both tables or an `entrypoint`; null where the bandit comes from an entry point or is given in Python.',
            examples=['data/iris_targets.csv'],
        ),
    ] = None
    entrypoint: Annotated[
        gym_env_schema.Entrypoint | None,
        Field(
            description='Callable returning the bandit (an `agilerl.families.bandits.BanditEnv`, called with `config` as keyword arguments) instead of the tables: a table built in code, from a database or a DataFrame. null: the tables.',
            examples=['bandits.py:make_bandit'],
        ),
    ] = None
    path: Annotated[
        Path | None,
        Field(
            description="Directory the entry point's file or module is resolved from; a relative one starts at the manifest's folder. null: the manifest's folder for a file, or for a module only that folder holds; a run records the absolute folder it used."
        ),
    ] = None
    config: Annotated[
        dict[str, Any] | None,
        Field(description='Keyword arguments for the entry point; null for none.'),
    ] = None
