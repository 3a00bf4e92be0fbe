# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from .llm_algorithm_schema import LLMAlgorithmFields


class DPOFields(LLMAlgorithmFields):
    """
    Fields of the DPO specification (shared with the manifest).
    """

    lr: Annotated[float, Field(description='Learning rate of the optimiser.', ge=0.0)] = 5e-06


class DPOSpec(DPOFields):
    """
    Direct Preference Optimisation (DPO) on chosen/rejected completion pairs.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-algorithm': {
                'agent_type': 'llm_agent',
                'off_policy': False,
                'training_fn': 'finetune_llm_preference',
                'network_spec': 'FinetuningNetworkSpec',
                'default_evo_steps': 5,
                'env_type': 'preference',
            }
        },
    )
