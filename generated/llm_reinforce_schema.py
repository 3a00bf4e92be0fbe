# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .llm_algorithm_schema import CompletionSamplingFields


class LLMREINFORCEFields(CompletionSamplingFields):
    """
    Fields of the LLM-REINFORCE specification (shared with the manifest).
    """

    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 5e-06
    clip_coef: Annotated[
        float, Field(description='Clipping coefficient of the surrogate objective.', ge=0.0, le=1.0)
    ] = 0.2
    gamma: Annotated[
        float,
        Field(
            description='Discount of the Monte-Carlo returns (between tokens at token granularity).',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.99
    action_granularity: Annotated[
        Literal['turn', 'token', 'auto'],
        Field(
            description='Deprecated alias of advantage_granularity: any value but auto overrides it (with a DeprecationWarning).'
        ),
    ] = 'auto'
    advantage_granularity: Annotated[
        Literal['turn', 'token', 'auto'],
        Field(
            description="Unit of the returns: token (each token's discounted return) or turn (one per completion, a completion being one turn); auto means token."
        ),
    ] = 'auto'
    importance_sampling_level: Annotated[
        Literal['token', 'turn', 'trajectory'],
        Field(
            description='Level of the importance ratio: token, turn (pooled per turn_ratio_pooling) or trajectory (the geometric mean over the completion).'
        ),
    ] = 'token'
    turn_ratio_pooling: Annotated[
        Literal['sum', 'mean'],
        Field(
            description="Pooling of a turn's token log-ratios: sum (the product of the ratios) or mean (their geometric mean)."
        ),
    ] = 'sum'


class LLMREINFORCESpec(LLMREINFORCEFields):
    """
    REINFORCE for reasoning fine-tuning: one completion per prompt, Monte-Carlo returns of the KL-shaped reward normalised over the batch (ReBN), a clipped surrogate.
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
