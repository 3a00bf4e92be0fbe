# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from .grpo_schema import GRPOFields


class GSPOFields(GRPOFields):
    """
    Fields of the GSPO specification (shared with the manifest): GRPO's, the ratio's level fixed to the sequence.
    """

    importance_sampling_level: Annotated[
        Literal['turn', 'trajectory'] | None,
        Field(
            description='Level of the importance ratio: one per completion (a completion is one turn, so turn and trajectory agree); null means trajectory. token, which would make GSPO GRPO, is refused.'
        ),
    ] = None


class GSPOSpec(GSPOFields):
    """
    Group Sequence Policy Optimisation (GSPO) for reasoning fine-tuning: GRPO with one length-normalised importance ratio per completion, clipped at the sequence level.
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
