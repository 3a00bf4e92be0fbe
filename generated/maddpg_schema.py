# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmFields


class MultiAgentDeterministicPolicyGradientFields(MultiAgentRLAlgorithmFields):
    """
    Fields of the multi-agent deterministic policy gradient algorithms (MADDPG, MATD3) but the soft-update coefficient tau, whose default differs (MADDPG 0.01, MATD3 0.015); MATD3 adds the delay of its actor updates (policy_freq).
    """

    vect_noise_dim: Annotated[
        int,
        Field(
            description='Number of parallel environments the exploration noise is drawn for.', ge=1
        ),
    ] = 1
    lr_actor: Annotated[
        float, Field(description="Learning rate of the actor's optimiser.", ge=0.0)
    ] = 0.001
    lr_critic: Annotated[
        float, Field(description="Learning rate of the critic's optimiser.", ge=0.0)
    ] = 0.01
    O_U_noise: Annotated[
        bool, Field(description='Explore with Ornstein-Uhlenbeck noise instead of Gaussian noise.')
    ] = True
    expl_noise: Annotated[float, Field(description='Scale of the exploration noise.', ge=0.0)] = 0.1
    mean_noise: Annotated[float, Field(description='Mean of the exploration noise.')] = 0.0
    theta: Annotated[
        float, Field(description='Rate of mean reversion of the Ornstein-Uhlenbeck noise.', ge=0.0)
    ] = 0.15
    dt: Annotated[
        float, Field(description='Time step of the Ornstein-Uhlenbeck noise.', gt=0.0)
    ] = 0.01


class MADDPGFields(MultiAgentDeterministicPolicyGradientFields):
    """
    Fields of the MADDPG specification (shared with the manifest).
    """

    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.01


class MADDPGSpec(MADDPGFields):
    """
    Multi-Agent Deep Deterministic Policy Gradient (MADDPG).
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'multi_agent',
                'off_policy': True,
                'training_fn': 'train_multi_agent_off_policy',
                'network_spec': 'DeterministicActorSpec',
                'default_evo_steps': 10000,
            }
        },
    )
