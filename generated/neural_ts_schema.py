# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .neural_ucb_schema import NeuralBanditFields


class NeuralTSFields(NeuralBanditFields):
    """
    Fields of the NeuralTS specification (shared with the manifest).
    """

    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.003


class NeuralTSSpec(NeuralTSFields):
    """
    Neural Thompson Sampling (NeuralTS) contextual bandit.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'bandit_agent',
                'off_policy': False,
                'training_fn': 'train_bandits',
                'network_spec': 'QNetworkSpec',
                'default_evo_steps': 500,
            }
        },
    )
