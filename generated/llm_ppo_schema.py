# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from .llm_algorithm_schema import CompletionSamplingFields

LrCritic = TypeAliasType(
    "LrCritic",
    Annotated[
        float,
        Field(
            description="Learning rate of the critic adapter and value head's optimiser; null for lr_actor.",
            ge=0.0,
        ),
    ],
)


class LLMPPOFields(CompletionSamplingFields):
    """
    Fields of the LLM-PPO specification (shared with the manifest).
    """

    lr_actor: Annotated[
        float, Field(description="Learning rate of the actor (policy) adapter's optimiser.", ge=0.0)
    ] = 5e-06
    lr_critic: Annotated[
        LrCritic | None,
        Field(
            description="Learning rate of the critic adapter and value head's optimiser; null for lr_actor."
        ),
    ] = 5e-06
    vf_coef: Annotated[float, Field(description='Weight of the clipped value loss.', ge=0.0)] = 0.5
    clip_coef: Annotated[
        float,
        Field(
            description='Clipping coefficient of the surrogate objective and of the value change.',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.2
    gamma: Annotated[
        float,
        Field(
            description='Discount (between tokens at token granularity, between turns at turn granularity).',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.99
    gae_lambda: Annotated[
        float, Field(description='Lambda of generalised advantage estimation.', ge=0.0, le=1.0)
    ] = 0.95
    action_granularity: Annotated[
        Literal['turn', 'token', 'auto'],
        Field(
            description='Deprecated alias of advantage_granularity: any value but auto overrides it (with a DeprecationWarning).'
        ),
    ] = 'auto'
    turn_level_clip: Annotated[
        bool,
        Field(
            description="With importance_sampling_level auto: the ratio's unit is the advantage's (true) or each token (false)."
        ),
    ] = True
    importance_sampling_level: Annotated[
        Literal['auto', 'token', 'turn', 'trajectory'],
        Field(
            description='Unit of the importance ratio: token, turn (pooled per turn_ratio_pooling), trajectory (the geometric mean over the episode) or auto (see turn_level_clip).'
        ),
    ] = 'auto'
    advantage_granularity: Annotated[
        Literal['turn', 'token', 'auto'],
        Field(
            description="Unit of the advantages and values: token (GAE over tokens) or turn (GAE over turns, a turn's value that of its last token); auto means token when every sample has one turn, else turn."
        ),
    ] = 'auto'
    turn_ratio_pooling: Annotated[
        Literal['sum', 'mean'],
        Field(
            description="Pooling of a turn's token log-ratios: sum (the product of the ratios) or mean (their geometric mean)."
        ),
    ] = 'sum'
    whiten_advantages: Annotated[
        bool,
        Field(
            description="Whiten the advantages over the batch's action tokens (token granularity) or played turns (turn granularity)."
        ),
    ] = True


class LLMPPOSpec(LLMPPOFields):
    """
    PPO for reasoning fine-tuning: one completion per prompt, a value head on a critic adapter of the same base model, generalised advantage estimation per token or per turn, a clipped surrogate and a clipped value loss.
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
