# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

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


class BanditEnvSpec(SpecBase):
    """
    A contextual bandit environment built from a labelled tabular dataset: each row of `features` is a context, its row of `targets` the correct arm.
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
            description='Local table of context features, one row per sample (.csv, .parquet or .pq). A manifest names both tables; null only where the bandit is given in Python (`LocalTrainer(..., env=BanditEnv(features, targets))`).',
            examples=['data/iris_features.csv'],
        ),
    ] = None
    targets: Annotated[
        TablePath | None,
        Field(
            description='Local table of target labels, one row per row of `features` (.csv, .parquet or .pq). A manifest names both tables; null only where the bandit is given in Python.',
            examples=['data/iris_targets.csv'],
        ),
    ] = None
