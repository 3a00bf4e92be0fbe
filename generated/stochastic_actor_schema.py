# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .network_schema import NetworkFields


class StochasticActorSpec(NetworkFields):
    """
    Model specification for evolvable stochastic actor networks.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    squash_output: Annotated[
        bool,
        Field(description='Squash continuous actions with tanh (log-probabilities corrected).'),
    ] = False
