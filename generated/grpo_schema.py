# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .llm_algorithm_schema import CompletionSamplingFields

AdvClipRange = TypeAliasType(
    "AdvClipRange",
    Annotated[
        float,
        Field(
            description='Clip advantages to [-adv_clip_range, adv_clip_range]; null for no clipping.',
            gt=0.0,
        ),
    ],
)


class GroupPolicyFields(CompletionSamplingFields):
    """
    Fields of the group-relative algorithms (GRPO, GSPO, CISPO) but the clipping coefficient, which CISPO widens to a pair of ratio bounds.
    """

    group_size: Annotated[
        int,
        Field(
            description='Completions sampled per prompt; advantages are computed within each group.',
            ge=1,
        ),
    ]
    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 5e-06
    adv_norm: Annotated[
        Literal['mean_std', 'mean', 'none'],
        Field(description='Normalisation of the group advantages.'),
    ] = 'mean_std'
    importance_sampling_level: Annotated[
        Literal['token', 'turn', 'trajectory'] | None,
        Field(description="Level of the importance ratios; null for the algorithm's own choice."),
    ] = None
    advantage_granularity: Annotated[
        Literal['auto', 'trajectory', 'turn'],
        Field(description='Level at which advantages are assigned.'),
    ] = 'auto'
    whiten_advantages: Annotated[
        bool, Field(description='Whiten the advantages of each batch.')
    ] = False
    adv_clip_range: Annotated[
        AdvClipRange | None,
        Field(
            description='Clip advantages to [-adv_clip_range, adv_clip_range]; null for no clipping.'
        ),
    ] = None
    filter_zero_adv: Annotated[bool, Field(description='Drop samples whose advantage is zero.')] = (
        False
    )
    turn_advantage_trajectory_fallback: Annotated[
        bool,
        Field(
            description='Fall back to trajectory advantages when turn advantages are unavailable.'
        ),
    ] = True
    loss_norm: Annotated[
        Literal['micro_batch', 'accumulation_window'], Field(description='Normaliser of the loss.')
    ] = 'micro_batch'


class GRPOFields(GroupPolicyFields):
    """
    Fields of the GRPO specification (shared with the manifest).
    """

    clip_coef: Annotated[
        float, Field(description='Clipping coefficient of the surrogate objective.', ge=0.0, le=1.0)
    ] = 0.2


class GRPOSpec(GRPOFields):
    """
    Group Relative Policy Optimisation (GRPO) for reasoning fine-tuning.
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
