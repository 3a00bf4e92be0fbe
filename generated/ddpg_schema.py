# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .rl_algorithm_schema import RLAlgorithmFields

MaxGradNorm = TypeAliasType(
    "MaxGradNorm",
    Annotated[
        float,
        Field(
            description="Clip the gradients of every actor and critic update to this global 2-norm; null for no clip, as AgileRL's, CleanRL's and Stable-Baselines3's DDPG and TD3 (this engine's default, 10, bounds the step of a rare huge TD error; on Hopper it held TD3 back: see the benchmarks).",
            gt=0.0,
        ),
    ],
)


class DeterministicPolicyGradientFields(RLAlgorithmFields):
    """
    Fields of the single-agent deterministic policy gradient algorithms (DDPG, TD3) but the soft-update coefficient tau, whose default differs (DDPG 0.001, TD3 0.005).
    """

    vect_noise_dim: Annotated[
        int,
        Field(
            description='Number of parallel environments the exploration noise is drawn for.', ge=1
        ),
    ] = 1
    lr_actor: Annotated[
        float, Field(description="Learning rate of the actor's optimiser.", ge=0.0)
    ] = 0.0001
    lr_critic: Annotated[
        float, Field(description="Learning rate of the critic's optimiser.", ge=0.0)
    ] = 0.001
    policy_freq: Annotated[
        int, Field(description='Critic updates per actor (and target network) update.', ge=1)
    ] = 2
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
    share_encoders: Annotated[
        bool, Field(description='Share the observation encoder between actor and critic.')
    ] = False
    max_grad_norm: Annotated[
        MaxGradNorm | None,
        Field(
            description="Clip the gradients of every actor and critic update to this global 2-norm; null for no clip, as AgileRL's, CleanRL's and Stable-Baselines3's DDPG and TD3 (this engine's default, 10, bounds the step of a rare huge TD error; on Hopper it held TD3 back: see the benchmarks)."
        ),
    ] = 10.0


class DDPGFields(DeterministicPolicyGradientFields):
    """
    Fields of the DDPG specification (shared with the manifest).
    """

    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.001


class DDPGSpec(DDPGFields):
    """
    Deep Deterministic Policy Gradient (DDPG).
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'single_agent',
                'off_policy': True,
                'training_fn': 'train_off_policy',
                'network_spec': 'DeterministicActorSpec',
                'default_evo_steps': 10000,
            }
        },
    )
