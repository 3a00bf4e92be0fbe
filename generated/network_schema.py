# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field

from . import cnn_schema, lstm_schema, mlp_schema, multi_input_schema, simba_schema


class NetworkCommonFields(SpecBase):
    """
    Fields of a network specification other than its encoder: the latent layer, the MLP head and build options. Shared with the manifest's network section, where the encoder's arch may also be given at the top or inferred.
    """

    model_config = ConfigDict(
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_latent_dim', 'atMost': 'max_latent_dim'}, {'field': 'latent_dim', 'within': ['min_latent_dim', 'max_latent_dim']}]
        },
    )
    latent_dim: Annotated[
        int, Field(description='Size of the latent vector between encoder and head.', gt=0)
    ] = 32
    min_latent_dim: Annotated[
        int, Field(description='Smallest latent_dim mutation may leave.', gt=0)
    ] = 8
    max_latent_dim: Annotated[
        int, Field(description='Largest latent_dim mutation may grow.', gt=1)
    ] = 128
    head_config: Annotated[
        mlp_schema.MlpSpec, Field(description='MLP head mapping the latent vector to the output.')
    ]
    random_seed: Annotated[
        int | None, Field(description='Seed for weight initialisation; null for none.')
    ] = None
    simba: Annotated[
        bool, Field(description='Use a SimBa encoder when the architecture is inferred.')
    ] = False


class NetworkFields(NetworkCommonFields):
    """
    Fields shared by every network specification. Not a document of its own: each network spec closes it.
    """

    encoder_config: Annotated[
        mlp_schema.MlpSpec | cnn_schema.CnnSpec | lstm_schema.LstmSpec | multi_input_schema.MultiInputSpec | simba_schema.SimbaSpec,
        Field(
            description='Encoder specification, selected by its `arch` tag.',
            discriminator='arch',
            title='EncoderConfig',
        ),
    ]


class NetworkSpec(NetworkFields):
    """
    Base model specification for nested AgileRL evolvable networks: an encoder selected by `arch` plus an MLP head.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
