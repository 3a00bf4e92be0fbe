# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .rl_algorithm_schema import RLAlgorithmFields


class RolloutBufferConfig(SpecBase):
    """
    Options of the rollout buffer.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    use_gae: Annotated[
        bool, Field(description='Compute advantages with generalised advantage estimation.')
    ] = True


MaxSeqLen = TypeAliasType(
    "MaxSeqLen",
    Annotated[
        int,
        Field(
            description='Longest sequence of backpropagation through time; null for whole episodes.',
            ge=1,
        ),
    ],
)


TargetKl = TypeAliasType(
    "TargetKl",
    Annotated[
        float,
        Field(
            description='Stop the update epochs early when the approximate KL divergence exceeds this; null for never.',
            ge=0.0,
        ),
    ],
)


class ProximalPolicyFields(SpecBase):
    """
    Fields of the clipped-surrogate policy optimisation of PPO and IPPO (whichever agents it serves): PPO's but the initial standard deviation of the action distribution, whose default differs (PPO 0.6, IPPO 0.0).
    """

    gae_lambda: Annotated[
        float, Field(description='Lambda of generalised advantage estimation.', ge=0.0, le=1.0)
    ] = 0.95
    clip_coef: Annotated[
        float, Field(description='Clipping coefficient of the surrogate objective.', ge=0.0, le=1.0)
    ] = 0.2
    ent_coef: Annotated[float, Field(description='Entropy bonus coefficient.', ge=0.0, le=1.0)] = (
        0.01
    )
    vf_coef: Annotated[
        float, Field(description='Value-function loss coefficient.', ge=0.0, le=1.0)
    ] = 0.5
    max_grad_norm: Annotated[
        float, Field(description='Gradient-norm clipping threshold.', ge=0.0)
    ] = 0.5
    target_kl: Annotated[
        TargetKl | None,
        Field(
            description='Stop the update epochs early when the approximate KL divergence exceeds this; null for never.'
        ),
    ] = None
    update_epochs: Annotated[int, Field(description='Passes over each rollout.', ge=1)] = 4
    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.0001


class NormalizationConfig(SpecBase):
    """
    What an agent normalises, by running statistics of what it has trained on.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    observation: Annotated[
        bool,
        Field(
            description='Observations: (obs - mean) / sqrt(var + epsilon), clipped to +-clip_observation (a vector Box observation space).'
        ),
    ] = True
    reward: Annotated[
        bool,
        Field(
            description="Rewards learnt from: divided by the running standard deviation of the discounted return (the agent's gamma), clipped to +-clip_reward. Episode returns, fitness and training scores stay in the environment's units."
        ),
    ] = True
    clip_observation: Annotated[
        float, Field(description='Bound of a normalised observation.', gt=0.0)
    ] = 10.0
    clip_reward: Annotated[float, Field(description='Bound of a scaled reward.', gt=0.0)] = 10.0
    epsilon: Annotated[
        float, Field(description='Added to every variance before its square root.', gt=0.0)
    ] = 1e-08


class PPOFields(ProximalPolicyFields, RLAlgorithmFields):
    """
    Fields of the PPO specification (shared with the manifest).
    """

    num_envs: Annotated[
        int, Field(description='Number of parallel environments collecting rollouts.', ge=1)
    ] = 1
    learn_step: Annotated[
        int,
        Field(
            description='Environment steps per rollout, between learning updates.',
            ge=1,
            title='LearnStep',
        ),
    ] = 2048
    action_std_init: Annotated[
        float,
        Field(
            description='Initial standard deviation of the action distribution (continuous actions).',
            ge=0.0,
        ),
    ] = 0.6
    rollout_buffer_config: Annotated[
        RolloutBufferConfig,
        Field(
            description='Options of the rollout buffer.',
            title='RolloutBufferConfig',
            validate_default=True,
        ),
    ] = {}
    recurrent: Annotated[
        bool,
        Field(
            description='Use a recurrent (LSTM) policy and train with backpropagation through time.'
        ),
    ] = False
    max_seq_len: Annotated[
        MaxSeqLen | None,
        Field(
            description='Longest sequence of backpropagation through time; null for whole episodes.'
        ),
    ] = 32
    share_encoders: Annotated[
        bool, Field(description='Share the observation encoder between actor and critic.')
    ] = True
    bptt_sequence_type: Annotated[
        Literal['chunked', 'maximum', 'fifty_percent_overlap'],
        Field(description='How rollouts are cut into sequences for backpropagation through time.'),
    ] = 'chunked'
    normalize: Annotated[
        NormalizationConfig | None,
        Field(
            description="Running-statistics normalisation of observations and rewards, as users of PPO on MuJoCo expect (Stable-Baselines3's VecNormalize): the statistics are the agent's, saved with it and kept by its clones; frozen while it acts and learns from a rollout and updated after; applied by predict and evaluation, which never update them. null: none."
        ),
    ] = None


class PPOSpec(PPOFields):
    """
    Proximal Policy Optimisation (PPO), optionally recurrent.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'single_agent',
                'off_policy': False,
                'training_fn': 'train_on_policy',
                'network_spec': 'StochasticActorSpec',
                'default_evo_steps': 10000,
            }
        },
    )
