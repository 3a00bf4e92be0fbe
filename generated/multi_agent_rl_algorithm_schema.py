# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import MultiAgentRLAlgorithmBase
from pydantic import ConfigDict, Field


class MultiAgentRLAlgorithmFields(MultiAgentRLAlgorithmBase):
    """
    Fields shared by every multi-agent algorithm specification.
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
    ] = 2048
    gamma: Annotated[
        float, Field(description='Discount factor.', ge=0.0, le=1.0, title='Gamma')
    ] = 0.99
    torch_compiler: Annotated[
        str | None,
        Field(description="torch.compile mode for the agents' networks; null to run eagerly."),
    ] = None


class MultiAgentRLAlgorithmSpec(MultiAgentRLAlgorithmFields):
    """
    Specification for multi-agent reinforcement learning algorithms.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
