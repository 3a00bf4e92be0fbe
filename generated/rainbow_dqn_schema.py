# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .rl_algorithm_schema import RLAlgorithmFields


class RainbowDQNFields(RLAlgorithmFields):
    """
    Fields of the RainbowDQN specification (shared with the manifest).
    """

    model_config = ConfigDict(
        json_schema_extra={'x-agilerl-rules': [{'field': 'v_min', 'below': 'v_max'}]},
    )
    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.001
    beta: Annotated[
        float,
        Field(
            description='Initial importance-sampling exponent of prioritised experience replay.',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.4
    prior_eps: Annotated[
        float,
        Field(
            description='Small constant added to priorities so that no transition has zero probability.',
            ge=0.0,
        ),
    ] = 1e-06
    num_atoms: Annotated[
        int, Field(description='Number of atoms of the value distribution.', ge=1)
    ] = 51
    v_min: Annotated[
        float, Field(description="Lower bound of the value distribution's support.")
    ] = -200.0
    v_max: Annotated[
        float, Field(description="Upper bound of the value distribution's support.")
    ] = 200.0
    noise_std: Annotated[
        float, Field(description='Initial standard deviation of the noisy layers.', ge=0.0)
    ] = 0.5
    n_step: Annotated[int, Field(description='Steps of the n-step return.', ge=1)] = 3
    combined_reward: Annotated[
        bool, Field(description='Combine the one-step and n-step losses.')
    ] = False
    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.0001


class RainbowDQNSpec(RainbowDQNFields):
    """
    Rainbow DQN: distributional, noisy, prioritised, n-step, dueling double DQN.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'single_agent',
                'off_policy': True,
                'training_fn': 'train_off_policy',
                'network_spec': 'RainbowQNetworkSpec',
                'default_evo_steps': 10000,
            }
        },
    )
