# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .grpo_schema import GroupPolicyFields

ClipCoef = TypeAliasType(
    "ClipCoef",
    Annotated[
        float,
        Field(
            description='Clip of the importance-sampling weight: a number e clips it to [1 - e, 1 + e]; a pair [low, high] is the bounds themselves (low at most high).',
            ge=0.0,
        ),
    ],
)


ClipCoef1Item = TypeAliasType("ClipCoef1Item", Annotated[float, Field(ge=0.0)])


ClipCoef1 = TypeAliasType(
    "ClipCoef1",
    Annotated[
        list[ClipCoef1Item],
        Field(
            description='Clip of the importance-sampling weight: a number e clips it to [1 - e, 1 + e]; a pair [low, high] is the bounds themselves (low at most high).',
            max_length=2,
            min_length=2,
        ),
    ],
)


class CISPOFields(GroupPolicyFields):
    """
    Fields of the CISPO specification (shared with the manifest): GRPO's, with a clipping coefficient that may be a pair of ratio bounds.
    """

    clip_coef: Annotated[
        ClipCoef | ClipCoef1,
        Field(
            description='Clip of the importance-sampling weight: a number e clips it to [1 - e, 1 + e]; a pair [low, high] is the bounds themselves (low at most high).'
        ),
    ] = 0.2


class CISPOSpec(CISPOFields):
    """
    Clipped Importance-Sampling-weight Policy Optimisation (CISPO) for reasoning fine-tuning: a REINFORCE-style token loss weighted by the clipped, gradient-free importance ratio, on GRPO's group advantages.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'llm_agent',
                'off_policy': False,
                'training_fn': 'finetune_llm_reasoning',
                'network_spec': 'FinetuningNetworkSpec',
                'default_evo_steps': 5,
                'env_type': 'reasoning',
            }
        },
    )
