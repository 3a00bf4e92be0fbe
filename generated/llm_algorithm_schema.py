# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import LLMAlgorithmBase, SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType


class CosineLRScheduleConfig(SpecBase):
    """
    Cosine learning-rate schedule with linear warm-up.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    num_epochs: Annotated[int, Field(description='Epochs the schedule spans.', ge=1)] = 100
    warmup_proportion: Annotated[
        float, Field(description='Share of the schedule spent warming up linearly.', ge=0.0, le=1.0)
    ] = 0.0


MaxNumBatchedTokens = TypeAliasType(
    "MaxNumBatchedTokens",
    Annotated[
        int, Field(description="Most tokens vLLM batches per step; null for vLLM's default.", ge=1)
    ],
)


MaxLoraRank = TypeAliasType(
    "MaxLoraRank",
    Annotated[
        int, Field(description="Largest LoRA rank vLLM serves; null for vLLM's default.", ge=1)
    ],
)


class VLLMConfig(SpecBase):
    """
    vLLM engine configuration for generating completions.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    tensor_parallel_size: Annotated[
        int, Field(description='GPUs each vLLM engine is split across.', ge=1)
    ] = 1
    gpu_memory_utilization: Annotated[
        float, Field(description='Share of GPU memory vLLM may take.', gt=0.0, le=1.0)
    ] = 0.3
    max_num_seqs: Annotated[
        int, Field(description='Most sequences vLLM generates at once.', ge=1)
    ] = 8
    enforce_eager: Annotated[
        bool | None,
        Field(description="Run vLLM eagerly, without CUDA graphs; null for vLLM's default."),
    ] = None
    sleep_mode: Annotated[
        bool,
        Field(description='Put the vLLM engine to sleep between generation phases to free memory.'),
    ] = False
    sleep_mode_level: Annotated[
        int,
        Field(description='vLLM sleep level: 1 offloads the weights, 2 discards them.', ge=1, le=2),
    ] = 1
    max_num_batched_tokens: Annotated[
        MaxNumBatchedTokens | None,
        Field(description="Most tokens vLLM batches per step; null for vLLM's default."),
    ] = None
    dtype: Annotated[
        str | None, Field(description="vLLM model dtype; null for the model's own.")
    ] = None
    quantization: Annotated[
        str | None, Field(description='vLLM quantisation method; null for none.')
    ] = None
    max_lora_rank: Annotated[
        MaxLoraRank | None,
        Field(description="Largest LoRA rank vLLM serves; null for vLLM's default."),
    ] = None
    lora_staging_dir: Annotated[
        str | None,
        Field(
            description='Folder where LoRA weights are staged for vLLM; null for a temporary one.'
        ),
    ] = None
    strip_multimodal_towers: Annotated[
        bool, Field(description='Load only the language model of a multimodal checkpoint.')
    ] = False


PretrainedModelNameOrPath = TypeAliasType(
    "PretrainedModelNameOrPath",
    Annotated[
        str,
        Field(
            description='Pretrained model to fine-tune (a local directory or a Hugging Face hub id); normally filled from the network section.',
            min_length=1,
        ),
    ],
)


class LLMAlgorithmFields(LLMAlgorithmBase):
    """
    Fields shared by every LLM fine-tuning algorithm specification.
    """

    batch_size: Annotated[
        int, Field(description='Number of samples per gradient update.', ge=1, title='BatchSize')
    ] = 128
    hp_config: Annotated[
        Any,
        Field(
            description='Ranges of the hyperparameters that evolutionary HPO may mutate; null for none.',
            title='HpConfig',
        ),
    ] = None
    beta: Annotated[
        float,
        Field(description='KL penalty coefficient against the reference policy.', ge=0.0, le=1.0),
    ] = 0.001
    max_grad_norm: Annotated[
        float, Field(description='Gradient-norm clipping threshold.', ge=0.0)
    ] = 0.1
    update_epochs: Annotated[
        int, Field(description='Passes over each batch of experience.', ge=1)
    ] = 1
    reduce_memory_peak: Annotated[
        bool, Field(description='Process the batch in smaller pieces to lower peak memory.')
    ] = False
    use_separate_reference_adapter: Annotated[
        bool, Field(description='Keep the reference policy as a separate LoRA adapter.')
    ] = False
    calc_position_embeddings: Annotated[
        bool, Field(description='Compute position ids from the attention mask.')
    ] = True
    gradient_checkpointing: Annotated[
        bool, Field(description='Trade compute for memory with gradient checkpointing.')
    ] = True
    use_liger_loss: Annotated[bool, Field(description='Use the fused Liger kernel loss.')] = False
    seed: Annotated[int, Field(description='Random seed.')] = 42
    quantization: Annotated[
        str | dict[str, Any] | None,
        Field(
            description='Quantisation: a preset name or keyword arguments of a bitsandbytes config; null for none.'
        ),
    ] = None
    activation_offload: Annotated[bool, Field(description='Offload activations to CPU memory.')] = (
        False
    )
    use_sequence_packing: Annotated[
        bool, Field(description='Pack several sequences into one row.')
    ] = False
    lora_target_scope: Annotated[
        str | None,
        Field(
            description='Sub-module that LoRA targets are restricted to; null for the whole model.',
            title='NullableString',
        ),
    ] = None
    fused_logprobs_chunk_rows: Annotated[
        int | None,
        Field(
            description='Rows per chunk of the fused log-probability computation; null for no chunking.',
            title='NullableInteger',
        ),
    ] = None
    fused_loss_chunk_rows: Annotated[
        int | None,
        Field(
            description='Rows per chunk of the fused loss computation; null for no chunking.',
            title='NullableInteger',
        ),
    ] = None
    vllm_importance_sampling_correction: Annotated[
        bool, Field(description="Correct for the vLLM sampler's policy mismatch.")
    ] = True
    vllm_importance_sampling_cap: Annotated[
        float, Field(description='Upper cap of the vLLM importance weights.', ge=0.0)
    ] = 2.0
    attn_implementation: Annotated[
        str | None,
        Field(
            description="transformers attention implementation; null for the model's default.",
            title='NullableString',
        ),
    ] = None
    pretrained_model_name_or_path: Annotated[
        PretrainedModelNameOrPath | None,
        Field(
            description='Pretrained model to fine-tune (a local directory or a Hugging Face hub id); normally filled from the network section.'
        ),
    ] = None
    max_model_len: Annotated[
        int, Field(description='Longest sequence the model handles, in tokens.', ge=1)
    ] = 1024
    lora_config: Annotated[
        Any, Field(description='LoRA configuration passed to the algorithm; null for none.')
    ] = None


MaxOutputTokens = TypeAliasType(
    "MaxOutputTokens",
    Annotated[
        int,
        Field(
            description="Most tokens generated per completion; null for no limit but the model's.",
            ge=1,
        ),
    ],
)


MinOutputTokens = TypeAliasType(
    "MinOutputTokens",
    Annotated[
        int, Field(description='Fewest tokens generated per completion; null for none.', ge=0)
    ],
)


class CompletionSamplingFields(LLMAlgorithmFields):
    """
    Fields of the LLM algorithms that sample completions of prompts and learn from their rewards (GRPO, GSPO, CISPO, LLM-REINFORCE, LLM-PPO).
    """

    model_config = ConfigDict(
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'min_output_tokens', 'atMost': 'max_output_tokens'}]
        },
    )
    temperature: Annotated[
        float, Field(description='Sampling temperature of the completions.', gt=0.0)
    ] = 0.9
    max_output_tokens: Annotated[
        MaxOutputTokens | None,
        Field(
            description="Most tokens generated per completion; null for no limit but the model's."
        ),
    ] = 1024
    min_output_tokens: Annotated[
        MinOutputTokens | None,
        Field(description='Fewest tokens generated per completion; null for none.'),
    ] = None
    cosine_lr_schedule_config: Annotated[
        CosineLRScheduleConfig | None,
        Field(description='Cosine learning-rate schedule; null for a constant learning rate.'),
    ] = None
    use_vllm: Annotated[bool, Field(description='Generate completions with vLLM.')] = False
    vllm_config: Annotated[
        VLLMConfig | None,
        Field(description='vLLM engine configuration; required when use_vllm is true.'),
    ] = None


class LLMAlgorithmSpec(LLMAlgorithmFields):
    """
    Specification for LLM fine-tuning algorithms.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
