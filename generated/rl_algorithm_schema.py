# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import RLAlgorithmBase
from pydantic import ConfigDict, Field


class RLAlgorithmFields(RLAlgorithmBase):
    """
    Fields shared by every single-agent algorithm specification.
    """

    batch_size: Annotated[
        int, Field(description='Number of samples per gradient update.', ge=1, title='BatchSize')
    ] = 128
    hp_config: Annotated[
        Any,
        Field(
            description='Ranges of the hyperparameters that evolutionary HPO may mutate; null for none.',
            title='HpConfig',
        ),
    ] = None
    learn_step: Annotated[
        int,
        Field(description='Environment steps between learning updates.', ge=1, title='LearnStep'),
    ] = 5
    gamma: Annotated[
        float, Field(description='Discount factor.', ge=0.0, le=1.0, title='Gamma')
    ] = 0.99


class RLAlgorithmSpec(RLAlgorithmFields):
    """
    Specification for single-agent reinforcement learning algorithms.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
