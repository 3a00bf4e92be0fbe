# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .rl_algorithm_schema import RLAlgorithmFields


class QLearningFields(RLAlgorithmFields):
    """
    Fields of DQN and CQN (Q-learning with a soft-updated target network): DQN's but the CUDA-graph capture of its update step, which only DQN has.
    """

    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.001
    double: Annotated[
        bool,
        Field(
            description='Use double Q-learning (the target network evaluates the greedy action).'
        ),
    ] = False
    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.0001


class DQNFields(QLearningFields):
    """
    Fields of the DQN specification (shared with the manifest).
    """

    cudagraphs: Annotated[bool, Field(description='Capture the update step with CUDA graphs.')] = (
        False
    )


class DQNSpec(DQNFields):
    """
    Deep Q-Network (DQN).
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'single_agent',
                'off_policy': True,
                'training_fn': 'train_off_policy',
                'network_spec': 'QNetworkSpec',
                'default_evo_steps': 10000,
            }
        },
    )
