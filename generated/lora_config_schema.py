# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import LoraConfigBase, SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

TargetModules = TypeAliasType(
    "TargetModules",
    Annotated[
        set[str],
        Field(
            description='Module names (a list, or a set from Python), a pattern, or `all-linear`; these modules receive adapters.',
            examples=[['q_proj', 'k_proj', 'v_proj', 'o_proj']],
        ),
    ],
)


class LoraConfigDict(LoraConfigBase):
    """
    Model specification for LLM LoRA configuration.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    lora_r: Annotated[int, Field(description='Rank of the LoRA update matrices.', ge=1)] = 16
    lora_alpha: Annotated[int, Field(description='LoRA scaling numerator.', ge=1)] = 32
    target_modules: Annotated[
        list[str] | str | TargetModules,
        Field(
            description='Module names (a list, or a set from Python), a pattern, or `all-linear`; these modules receive adapters.',
            examples=[['q_proj', 'k_proj', 'v_proj', 'o_proj']],
        ),
    ] = 'all-linear'
    task_type: Annotated[str, Field(description='PEFT task type.', min_length=1)] = 'CAUSAL_LM'
    lora_dropout: Annotated[
        float, Field(description='Dropout on the LoRA path.', ge=0.0, le=1.0)
    ] = 0.05
