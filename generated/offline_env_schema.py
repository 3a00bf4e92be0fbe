# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .gym_env_schema import GymEnvFields


class OfflineEnvSpec(GymEnvFields):
    """
    An offline dataset of transitions plus the Gymnasium environment the agent is evaluated in (the Gymnasium fields describe that evaluation environment).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    dataset_path: Annotated[
        str,
        Field(
            description='Local HDF5 file of transitions (observations, actions, rewards, next_observations, terminals). Nothing is ever downloaded.',
            examples=['data/cartpole.h5'],
            min_length=1,
        ),
    ]
