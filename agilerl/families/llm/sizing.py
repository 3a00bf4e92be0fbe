"""What an LLM run allocates and does, sized from the model's ``config.json`` before the
model is loaded.

transformers builds a model from its ``config.json`` and only then reads the weights: a
config declaring hundreds of billions of parameters (beside a weights file of a few
bytes) had it allocate them, and a ``group_size`` or ``batch_size`` of 10**6 made a run
that validated and then hung. The parameter count comes from the fields every decoder
config of transformers declares (:data:`FIELDS`); the memory of a run and its work are
then estimated as the RL families' are (:mod:`agilerl.training.preflight`,
:mod:`agilerl.training.work`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from agilerl.training.preflight import (
    GENERATIONS_ALIVE,
    OPTIMISED_COPIES,
    Estimate,
    Need,
    PreflightError,
    size_text,
)
from agilerl.training.work import Factor, Work, factor

#: A config.json larger than this is not a model config (real ones are a few KiB).
MAX_CONFIG_BYTES = 1 << 20
#: The config fields the count needs: name -> the other names configs use for it.
FIELDS = {
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "vocab_size": ("vocab_size",),
}
#: The models are loaded in float32 (:func:`agilerl.llm.models.load_causal_lm`).
PARAMETER_BYTES = 4
#: Floats a layer keeps per token for the backward pass: q, k, v, the attention output
#: and the two norms' inputs (6 x hidden), the MLP's gate and up projections
#: (2 x intermediate); the logits over the vocabulary come on top.
HIDDEN_WIDTHS, INTERMEDIATE_WIDTHS = 6, 2
#: Linear layers of a decoder layer a LoRA adapter may target (q, k, v, o; gate, up,
#: down): the adapter is counted as if it targeted all of them (an upper bound).
ATTENTION_LINEARS, MLP_LINEARS = 4, 3


def read_config(directory: Path, field: str) -> dict[str, Any]:
    """The model's ``config.json``, read with a bound; a file that is missing, too large
    or not a JSON object is left to the loader's own refusal (returns {})."""
    path = directory / "config.json"
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        return {}
    if len(raw) > MAX_CONFIG_BYTES:
        raise PreflightError(
            f"{field}: {path}: more than {size_text(MAX_CONFIG_BYTES)}, not a model config"
        )
    try:
        config = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise PreflightError(f"{field}: {path}: not valid JSON ({err})") from None
    return config if isinstance(config, dict) else {}


def config_int(config: dict[str, Any], name: str, path: Path) -> int | None:
    """``name`` (or one of its aliases in :data:`FIELDS`) of a config: a positive
    integer, None when absent; any other value is refused naming the file and key."""
    for key in FIELDS.get(name, (name,)):
        if key in config and config[key] is not None:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PreflightError(f"{path}: {key}: {value!r} is not a positive integer")
            return value
    return None


class ModelSize:
    """The shape of a decoder-only model, from its config."""

    def __init__(self, config: dict[str, Any], path: Path) -> None:
        sizes = {name: config_int(config, name, path) for name in FIELDS}
        missing = [FIELDS[name][0] for name, value in sizes.items() if value is None]
        if missing:
            raise LookupError(", ".join(missing))
        self.hidden = sizes["hidden_size"] or 1
        self.layers = sizes["num_hidden_layers"] or 1
        self.vocab = sizes["vocab_size"] or 1
        self.intermediate = config_int(config, "intermediate_size", path) or 4 * self.hidden
        heads = config_int(config, "num_attention_heads", path) or 1
        kv_heads = config_int(config, "num_key_value_heads", path) or heads
        self.kv_width = self.hidden * min(kv_heads, heads) // heads
        self.tied = bool(config.get("tie_word_embeddings", True))

    @property
    def parameters(self) -> int:
        """Embeddings (and an untied output layer), then per layer the attention's four
        projections (k and v narrower with grouped-query attention), a gated MLP's three
        matrices (an upper bound for a plain MLP's two) and two norms."""
        h = self.hidden
        attention = 2 * h * h + 2 * h * self.kv_width
        layer = attention + 3 * h * self.intermediate + 2 * h
        return self.vocab * h * (1 if self.tied else 2) + self.layers * layer + h

    def adapter(self, rank: int) -> int:
        """Parameters of a rank-``rank`` LoRA adapter on every linear layer."""
        h, i = self.hidden, self.intermediate
        return self.layers * rank * (ATTENTION_LINEARS * 2 * h + MLP_LINEARS * (h + i))

    def per_token(self) -> int:
        """Floats a token of a training forward keeps for the backward pass."""
        widths = HIDDEN_WIDTHS * self.hidden + INTERMEDIATE_WIDTHS * self.intermediate
        return self.layers * widths + self.vocab


def model_size(directory: Path, field: str) -> ModelSize | None:
    """The model's shape, or None where its config does not say it (the loader then
    refuses or loads it; a weights file is no larger than its own size)."""
    path = directory / "config.json"
    try:
        return ModelSize(read_config(directory, field), path)
    except LookupError:
        return None


def sequences(ctx: Any) -> tuple[Factor, ...]:
    """The counts of sequences a step processes: prompts, completions of each (GRPO)."""
    algorithm = ctx.algorithm
    found = [factor("algorithm", algorithm, "batch_size")]
    if getattr(algorithm, "group_size", None):
        # group_size has no schema default: 8 is the shipped configs' (and AgileRL's examples')
        found.append(Factor("algorithm.group_size", algorithm.group_size, 8))
    return tuple(found)


def sequence_tokens(ctx: Any) -> Factor:
    """Tokens of the longest sequence (``algorithm.max_model_len``): derived, never the
    count a refusal names."""
    tokens = int(ctx.algorithm.max_model_len)
    return Factor("tokens a sequence", tokens, tokens)


def estimate_llm(ctx: Any, size: ModelSize, field: str) -> Estimate:
    """The base model (shared), the population's adapters (with gradients and Adam
    moments; two generations alive during selection), and one training chunk's
    activations."""
    algorithm, pop = ctx.algorithm, ctx.training.pop_size
    lora = ctx.algorithm.lora_config or (ctx.network.lora_config if ctx.network else None)
    rank = int(getattr(lora, "lora_r", 16) or 16)
    adapter = size.adapter(rank) * PARAMETER_BYTES * (1 + OPTIMISED_COPIES)
    counts = sequences(ctx)
    rows = math.prod(count.value for count in counts)
    chunk = min(rows, algorithm.fused_loss_chunk_rows or rows)
    culprit = max(counts, key=lambda count: count.excess)
    tokens = sequence_tokens(ctx).value
    per_row = tokens * size.per_token() * 4
    return Estimate(
        [
            Need(
                field,
                f"a model of {size.parameters:,} parameters (float32)",
                size.parameters * PARAMETER_BYTES,
            ),
            Need(
                "training.pop_size",
                f"{pop:,} LoRA adapters of {size_text(adapter)} (rank {rank}, with gradients "
                f"and optimiser state; {GENERATIONS_ALIVE} generations alive during selection)",
                GENERATIONS_ALIVE * pop * adapter,
            ),
            Need(
                culprit.path,
                f"training on {chunk:,} sequences at once of {tokens:,} tokens "
                f"({' x '.join(f'{c.path} {c.value:,}' for c in counts)} sequences a batch; "
                f"their activations and logits, {size_text(per_row)} each)",
                chunk * per_row,
            ),
        ]
    )


def llm_work(ctx: Any) -> list[Work]:
    """Tokens through the model: each step's sequences, sampled (GRPO) and trained on for
    ``update_epochs``; each evaluation at least a batch of the test split per pass."""
    algorithm, training = ctx.algorithm, ctx.training
    pop, steps = factor("training", training, "pop_size"), factor("training", training, "max_steps")
    tokens, counts = sequence_tokens(ctx), sequences(ctx)
    epochs = factor("algorithm", algorithm, "update_epochs")
    evo_steps = training.evo_steps or algorithm.default_evo_steps
    count = -(-steps.value // evo_steps)
    generations = Factor("generations", count, count)
    rounds = factor("training", training, "eval_loop")
    prompts = factor("algorithm", algorithm, "batch_size")
    return [
        Work("training", (pop, steps, *counts, epochs, tokens)),
        Work("the evaluations", (pop, generations, rounds, prompts, tokens)),
    ]
