# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .gym_env_schema import GymEnvFields

DatasetPath = TypeAliasType(
    "DatasetPath",
    Annotated[
        str,
        Field(
            description='Local HDF5 file of transitions (observations, actions, rewards, next_observations, terminals). Nothing is ever downloaded. null: the dataset is `minari_dataset_id`.',
            examples=['data/cartpole.h5'],
            min_length=1,
        ),
    ],
)


MinariDatasetId = TypeAliasType(
    "MinariDatasetId",
    Annotated[
        str,
        Field(
            description="A Minari dataset id, `(namespace/)name(-vN)`: letters, digits, `-` and `_`, the namespace's parts joined by `/` (no `.`, so no path outside the data directory).",
            pattern='^([-_A-Za-z0-9][-_A-Za-z0-9/]*[-_A-Za-z0-9]/)?[-_A-Za-z0-9]+(-v[0-9]+)?$',
            title='MinariDatasetId',
        ),
    ],
)


class OfflineEnvSpec(GymEnvFields):
    """
    An offline dataset of transitions plus the Gymnasium environment the agent is evaluated in (the Gymnasium fields describe that evaluation environment). The transitions come from exactly one source: a local HDF5 file (`dataset_path`) or a Minari dataset in the local Minari data directory (`minari_dataset_id`).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dataset_path: Annotated[
        DatasetPath | None,
        Field(
            description='Local HDF5 file of transitions (observations, actions, rewards, next_observations, terminals). Nothing is ever downloaded. null: the dataset is `minari_dataset_id`.',
            examples=['data/cartpole.h5'],
        ),
    ] = None
    minari_dataset_id: Annotated[
        MinariDatasetId | None,
        Field(
            description='Id of a Minari dataset in the local Minari data directory (`MINARI_DATASETS_PATH`, else `~/.minari/datasets`; the `offline` extra). Nothing is downloaded at run time: fetch it first with `minari download ID`. null: the dataset is `dataset_path`.',
            examples=['cartpole/random-v0'],
        ),
    ] = None
    remote: Annotated[
        bool,
        Field(
            description="AgileRL downloads a Minari dataset missing locally when true. Here nothing is downloaded at run time, so a run refuses true (fetch the dataset with `minari download ID`); false is accepted for AgileRL's manifests."
        ),
    ] = False
