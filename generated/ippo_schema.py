# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmFields
from .ppo_schema import ProximalPolicyFields

ActionBatchSize = TypeAliasType(
    "ActionBatchSize",
    Annotated[
        int,
        Field(description="Agents' actions computed per forward pass; null for all at once.", ge=1),
    ],
)


class IPPOFields(ProximalPolicyFields, MultiAgentRLAlgorithmFields):
    """
    Fields of the IPPO specification (shared with the manifest).
    """

    action_std_init: Annotated[
        float,
        Field(
            description='Initial standard deviation of the action distribution (continuous actions).',
            ge=0.0,
        ),
    ] = 0.0
    action_batch_size: Annotated[
        ActionBatchSize | None,
        Field(description="Agents' actions computed per forward pass; null for all at once."),
    ] = None


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
