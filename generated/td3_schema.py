# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .ddpg_schema import DeterministicPolicyGradientFields


class TD3Fields(DeterministicPolicyGradientFields):
    """
    Fields of the TD3 specification (shared with the manifest).
    """

    tau: Annotated[
        float,
        Field(description='Soft-update coefficient of the target network(s).', ge=0.0, le=1.0),
    ] = 0.005


class TD3Spec(TD3Fields):
    """
    Twin Delayed Deep Deterministic Policy Gradient (TD3).
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
