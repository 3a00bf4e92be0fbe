# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field

from . import cnn_schema, mlp_schema


class MultiInputSpec(SpecBase):
    """
    Model specification for evolvable multi-input networks (Dict and Tuple observation spaces).
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_latent_dim', 'atMost': 'max_latent_dim'}, {'field': 'latent_dim', 'within': ['min_latent_dim', 'max_latent_dim']}]
        },
    )
    latent_dim: Annotated[
        int, Field(description='Size of the latent vector the parts are combined into.', gt=0)
    ] = 32
    vector_space_mlp: Annotated[
        bool,
        Field(description='Pass the vector parts through an MLP instead of concatenating them.'),
    ] = False
    min_latent_dim: Annotated[
        int, Field(description='Smallest latent_dim mutation may leave.', gt=0)
    ] = 8
    max_latent_dim: Annotated[
        int, Field(description='Largest latent_dim mutation may grow.', gt=1)
    ] = 128
    mlp_config: Annotated[
        mlp_schema.MlpSpec | None,
        Field(description='Encoder for the vector parts; null for the default.'),
    ] = None
    cnn_config: Annotated[
        cnn_schema.CnnSpec | None,
        Field(description='Encoder for the image parts; null for the default.'),
    ] = None
    arch: Annotated[Literal['multiinput'], Field(description='Encoder architecture tag.')] = (
        'multiinput'
    )
