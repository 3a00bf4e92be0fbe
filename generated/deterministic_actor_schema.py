# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from pydantic import ConfigDict

from .network_schema import NetworkFields


class DeterministicActorSpec(NetworkFields):
    """
    Model specification for evolvable deterministic actor networks.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
