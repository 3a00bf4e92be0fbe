# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmFields

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


ActionBatchSize = TypeAliasType(
    "ActionBatchSize",
    Annotated[
        int,
        Field(description="Agents' actions computed per forward pass; null for all at once.", ge=1),
    ],
)


class IPPOFields(MultiAgentRLAlgorithmFields):
    """
    Fields of the IPPO specification (shared with the manifest).
    """

    gae_lambda: Annotated[
        float, Field(description='Lambda of generalised advantage estimation.', ge=0.0, le=1.0)
    ] = 0.95
    action_std_init: Annotated[
        float,
        Field(
            description='Initial standard deviation of the action distribution (continuous actions).',
            ge=0.0,
        ),
    ] = 0.0
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
    action_batch_size: Annotated[
        ActionBatchSize | None,
        Field(description="Agents' actions computed per forward pass; null for all at once."),
    ] = None
    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 0.0001


class IPPOSpec(IPPOFields):
    """
    Independent Proximal Policy Optimisation (IPPO) for multi-agent environments.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'multi_agent',
                'off_policy': False,
                'training_fn': 'train_multi_agent_on_policy',
                'network_spec': 'StochasticActorSpec',
                'default_evo_steps': 10000,
            }
        },
    )
