# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field


class LstmSpec(SpecBase):
    """
    Model specification for evolvable LSTM networks.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_hidden_state_size', 'atMost': 'max_hidden_state_size'}, {'field': 'hidden_state_size', 'within': ['min_hidden_state_size', 'max_hidden_state_size']}, {'field': 'min_layers', 'atMost': 'max_layers'}, {'field': 'num_layers', 'within': ['min_layers', 'max_layers']}]
        },
    )
    hidden_state_size: Annotated[
        int, Field(description='Size of the LSTM hidden state.', examples=[64], gt=0)
    ]
    num_layers: Annotated[int, Field(description='Number of stacked LSTM layers.', gt=0)] = 1
    min_hidden_state_size: Annotated[
        int, Field(description='Smallest hidden state mutation may leave.', gt=0)
    ] = 8
    max_hidden_state_size: Annotated[
        int, Field(description='Largest hidden state mutation may grow.', gt=1)
    ] = 256
    min_layers: Annotated[
        int, Field(description='Fewest LSTM layers mutation may leave.', ge=0)
    ] = 1
    max_layers: Annotated[int, Field(description='Most LSTM layers mutation may add.', ge=1)] = 6
    dropout: Annotated[
        float, Field(description='Dropout between stacked LSTM layers.', ge=0.0, le=1.0)
    ] = 0.0
    arch: Annotated[Literal['lstm'], Field(description='Encoder architecture tag.')] = 'lstm'
