# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from pydantic import ConfigDict

from .network_schema import NetworkFields


class ContinuousQNetworkSpec(NetworkFields):
    """
    Model specification for evolvable continuous Q networks (Q of a state and an action).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
