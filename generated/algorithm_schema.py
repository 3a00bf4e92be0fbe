# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import AlgorithmBase
from pydantic import ConfigDict, Field


class AlgorithmFields(AlgorithmBase):
    """
    Fields shared by every algorithm specification.
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


class AlgorithmSpec(AlgorithmFields):
    """
    Base specification for all algorithms.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
