# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field


class CnnSpec(SpecBase):
    """
    Model specification for evolvable convolutional networks.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_hidden_layers', 'atMost': 'max_hidden_layers'}, {'field': 'min_channel_size', 'atMost': 'max_channel_size'}, {'sameLength': ['channel_size', 'kernel_size', 'stride_size']}, {'field': 'channel_size', 'measure': 'length', 'within': ['min_hidden_layers', 'max_hidden_layers']}, {'field': 'channel_size', 'measure': 'items', 'within': ['min_channel_size', 'max_channel_size']}]
        },
    )
    channel_size: Annotated[
        list[int],
        Field(
            description='Output channels of each convolutional layer.',
            examples=[[32, 64]],
            min_length=1,
        ),
    ]
    kernel_size: Annotated[
        list[int],
        Field(
            description='Kernel size of each convolutional layer (one entry per layer).',
            examples=[[8, 4]],
            min_length=1,
        ),
    ]
    stride_size: Annotated[
        list[int],
        Field(
            description='Stride of each convolutional layer (one entry per layer).',
            examples=[[4, 2]],
            min_length=1,
        ),
    ]
    min_hidden_layers: Annotated[
        int, Field(description='Fewest convolutional layers mutation may leave.', gt=0)
    ] = 1
    max_hidden_layers: Annotated[
        int, Field(description='Most convolutional layers mutation may add.', gt=1)
    ] = 6
    min_channel_size: Annotated[
        int, Field(description='Fewest channels a layer may have.', gt=0)
    ] = 8
    max_channel_size: Annotated[int, Field(description='Most channels a layer may have.', gt=1)] = (
        256
    )
    layer_norm: Annotated[
        bool, Field(description='Apply normalisation after each convolution.')
    ] = False
    init_layers: Annotated[
        bool, Field(description="Initialise layers with the network's scheme.")
    ] = True
    activation: Annotated[
        Literal['Tanh', 'GELU', 'ReLU', 'ELU', 'LeakyReLU', 'Sigmoid', 'Softplus', 'Softmax', 'GumbelSoftmax', 'PReLU', 'Identity'],
        Field(description='Activation after each convolution.', title='Activation'),
    ] = 'ReLU'
    arch: Annotated[Literal['cnn'], Field(description='Encoder architecture tag.')] = 'cnn'
