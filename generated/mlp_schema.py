# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import MlpSpecBase
from pydantic import ConfigDict, Field


class MlpSpec(MlpSpecBase):
    """
    Model specification for evolvable MLP networks.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_hidden_layers', 'atMost': 'max_hidden_layers'}, {'field': 'min_mlp_nodes', 'atMost': 'max_mlp_nodes'}, {'field': 'hidden_size', 'measure': 'length', 'within': ['min_hidden_layers', 'max_hidden_layers']}, {'field': 'hidden_size', 'measure': 'items', 'within': ['min_mlp_nodes', 'max_mlp_nodes']}]
        },
    )
    hidden_size: Annotated[
        list[int],
        Field(
            description='Number of nodes in each hidden layer; its length is the number of hidden layers.',
            examples=[[64, 64]],
            min_length=1,
        ),
    ]
    activation: Annotated[
        Literal['Tanh', 'GELU', 'ReLU', 'ELU', 'LeakyReLU', 'Sigmoid', 'Softplus', 'Softmax', 'GumbelSoftmax', 'PReLU', 'Identity'],
        Field(description='Activation after each hidden layer.', title='Activation'),
    ] = 'ReLU'
    output_activation: Annotated[
        Literal['Tanh', 'GELU', 'ReLU', 'ELU', 'LeakyReLU', 'Sigmoid', 'Softplus', 'Softmax', 'GumbelSoftmax', 'PReLU', 'Identity'] | None,
        Field(description='Activation applied to the output layer; null for none.'),
    ] = None
    layer_norm: Annotated[
        bool, Field(description='Apply layer normalisation after each hidden layer.')
    ] = True
    init_layers: Annotated[
        bool, Field(description="Initialise linear layers with the network's scheme.")
    ] = True
    output_vanish: Annotated[
        bool, Field(description="Scale down the output layer's initial weights.")
    ] = True
    min_hidden_layers: Annotated[
        int, Field(description='Fewest hidden layers mutation may leave.', gt=0)
    ] = 1
    max_hidden_layers: Annotated[
        int, Field(description='Most hidden layers mutation may add.', gt=1)
    ] = 6
    min_mlp_nodes: Annotated[
        int, Field(description='Fewest nodes a hidden layer may have.', gt=0)
    ] = 8
    max_mlp_nodes: Annotated[
        int, Field(description='Most nodes a hidden layer may have.', gt=1)
    ] = 256
    arch: Annotated[Literal['mlp'], Field(description='Encoder architecture tag.')] = 'mlp'
