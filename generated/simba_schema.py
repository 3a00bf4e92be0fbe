# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field


class SimbaSpec(SpecBase):
    """
    Model specification for evolvable SimBa networks (residual MLP blocks with pre-layer-norm, arXiv:2410.09754).
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_blocks', 'atMost': 'max_blocks'}, {'field': 'num_blocks', 'within': ['min_blocks', 'max_blocks']}, {'field': 'min_mlp_nodes', 'atMost': 'max_mlp_nodes'}, {'field': 'hidden_size', 'within': ['min_mlp_nodes', 'max_mlp_nodes']}]
        },
    )
    hidden_size: Annotated[
        int, Field(description='Width of the residual stream.', examples=[128], gt=0)
    ]
    num_blocks: Annotated[int, Field(description='Number of residual blocks.', examples=[2], gt=0)]
    output_activation: Annotated[
        Literal['Tanh', 'GELU', 'ReLU', 'ELU', 'LeakyReLU', 'Sigmoid', 'Softplus', 'Softmax', 'GumbelSoftmax', 'PReLU', 'Identity'] | None,
        Field(description='Activation applied to the output layer; null for none.'),
    ] = None
    scale_factor: Annotated[
        int, Field(description='Expansion factor of the inner layer of each block.', gt=0)
    ] = 4
    min_blocks: Annotated[int, Field(description='Fewest blocks mutation may leave.', gt=0)] = 1
    max_blocks: Annotated[int, Field(description='Most blocks mutation may add.', gt=1)] = 4
    min_mlp_nodes: Annotated[
        int, Field(description='Smallest hidden_size mutation may leave.', gt=0)
    ] = 8
    max_mlp_nodes: Annotated[
        int, Field(description='Largest hidden_size mutation may grow.', gt=1)
    ] = 256
    arch: Annotated[Literal['simba'], Field(description='Encoder architecture tag.')] = 'simba'
