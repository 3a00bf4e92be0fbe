# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field

from . import lora_config_schema


class FinetuningNetworkSpec(SpecBase):
    """
    Model specification for LLM finetuning networks.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    pretrained_model_name_or_path: Annotated[
        str,
        Field(
            description='The pretrained model: a local directory (relative to the manifest) or a Hugging Face hub id (org/name) resolved through the hub cache, with downloads off under HF_HUB_OFFLINE. A name starting with /, ./, ../ or ~, or naming something that exists beside the manifest, is a path.',
            min_length=1,
        ),
    ]
    max_context_length: Annotated[
        int, Field(description='Longest prompt plus completion, in tokens.', ge=1)
    ]
    lora_config: Annotated[
        lora_config_schema.LoraConfigDict | None,
        Field(description='LoRA adapter settings; null to train without adapters.'),
    ] = None
