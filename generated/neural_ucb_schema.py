# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .rl_algorithm_schema import RLAlgorithmFields


class NeuralBanditFields(RLAlgorithmFields):
    """
    Fields of the neural contextual bandits (NeuralUCB, NeuralTS) but the learning rate, whose default differs (NeuralUCB 0.001, NeuralTS 0.003).
    """

    gamma: Annotated[
        float, Field(description='Scale of the exploration bonus.', ge=0.0, le=1.0, title='Gamma')
    ] = 1.0
    lamb: Annotated[
        float, Field(description='Regularisation parameter lambda of the design matrix.', ge=0.0)
    ] = 1.0
    reg: Annotated[
        float,
        Field(
            description='Weight of the L2 regularisation towards the initial parameters.', ge=0.0
        ),
    ] = 0.000625
    learn_step: Annotated[
        int,
        Field(description='Environment steps between learning updates.', ge=1, title='LearnStep'),
    ] = 2


class NeuralUCBFields(NeuralBanditFields):
    """
    Fields of the NeuralUCB specification (shared with the manifest).
    """

    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.001


class NeuralUCBSpec(NeuralUCBFields):
    """
    Neural Upper Confidence Bound (NeuralUCB) contextual bandit.
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
