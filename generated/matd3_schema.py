# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .maddpg_schema import MultiAgentDeterministicPolicyGradientFields


class MATD3Fields(MultiAgentDeterministicPolicyGradientFields):
    """
    Fields of the MATD3 specification (shared with the manifest).
    """

    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.015
    policy_freq: Annotated[
        int, Field(description='Critic updates per actor (and target network) update.', ge=1)
    ] = 2


class MATD3Spec(MATD3Fields):
    """
    Multi-Agent Twin Delayed Deep Deterministic Policy Gradient (MATD3).
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
