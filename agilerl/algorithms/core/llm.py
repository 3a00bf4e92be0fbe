"""``LLMAlgorithm``: the LLM fine-tuning family (GRPO and its kin, DPO, SFT) on transformers + peft.

An LLM agent is a pretrained ``transformers`` causal language model with a ``peft`` LoRA
adapter. Only the adapter trains and evolves: every agent built on the same base model
object adds its own named adapter to one shared peft model
(:class:`~agilerl.llm.adapters.SharedBase`), so clones share the frozen base weights and
copy only adapter weights and optimiser state. There is no architecture, activation or
weight-noise mutation; hyperparameters (``lr``, ``beta``, ``group_size``, ...) mutate as
every family's do, when the manifest gives their ranges (none mutate by default).

The reference policy (for the KL penalty of GRPO and SFT and DPO's implicit rewards) is
the base model with the adapter disabled, or, with ``use_separate_reference_adapter``, a
frozen adapter of the agent's own (``ref``; a copy of the adapter as built, loaded or
cloned; :meth:`LLMAlgorithm.update_reference_policy` re-copies it).

This module holds what the three algorithms share: the model set-up from the spec
fields, the token log-probabilities (in row chunks), the optimiser step (loss in row
chunks with gradient accumulation, clipping, the learning-rate schedule) and checkpoints.
How each field takes effect:

* ``gradient_checkpointing``: recompute activations in the backward pass (transformers'
  non-reentrant checkpointing), switched on for this agent's training forwards.
* ``max_model_len``: the longest sequence: GRPO prompts plus completions stay within it,
  DPO / SFT sequences are cut to it. A model with a shorter ``max_position_embeddings``
  caps it further.
* ``attn_implementation``: the model's attention kernel (``sdpa``, ``eager``,
  ``flex_attention``; flash attention needs its package).
* ``fused_logprobs_chunk_rows``: log-probabilities without a gradient (reference policy,
  sampling policy, evaluation) are computed this many rows at a time (all rows at once
  when null); ``reduce_memory_peak`` computes them one row at a time.
* ``fused_loss_chunk_rows``: the loss forward and backward run this many rows at a time,
  gradients accumulating into one optimiser step.
* ``calc_position_embeddings``: position ids from the attention mask (left padding does
  not shift positions); off, positions are the column indices.
* ``max_grad_norm``: global gradient-norm clip of every step (0: no clipping).
* ``update_epochs``: optimiser steps on each batch.
* ``seed``: the adapter's initialisation and the agent's sampling stream (mixed with the
  population index, so agents of one population sample differently).
* ``lora_config`` / ``lora_target_scope``: the peft ``LoraConfig``; the scope restricts
  ``target_modules`` to the modules under one sub-module.
* ``activation_offload``: saved activations go to CPU memory during a CUDA backward pass.
* ``batch_size``: read by the environment (prompts or pairs per batch).

What cannot work is refused before anything is built, by :func:`refusals` (which the
pre-flight also calls): vLLM generation (and the ``vllm_*`` fields without it), Liger
kernels, quantisation, sequence packing, activation offload without CUDA, an unknown or
unavailable attention implementation.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.core.evolvable import EvolvableAlgorithm
from agilerl.algorithms.hyperparameters import positive_int
from agilerl.files import checkpoints

#: Attention kernels a model can be asked for, with the package each needs (None: torch).
ATTENTION_IMPLEMENTATIONS = {
    "eager": None,
    "sdpa": None,
    "flex_attention": None,
    "flash_attention_2": "flash_attn",
    "flash_attention_3": "flash_attn_interface",
}

#: Fields that only take effect with vLLM generation, with their defaults.
_VLLM_ONLY = {
    "vllm_config": None,
    "vllm_importance_sampling_correction": True,
    "vllm_importance_sampling_cap": 2.0,
}


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _field(spec: Any, name: str, default: Any = None) -> Any:
    if isinstance(spec, Mapping):
        return spec.get(name, default)
    return getattr(spec, name, default)


def refusals(spec: Any, device: str | torch.device | None = None) -> list[str]:
    """Why the LLM algorithm of ``spec`` (a GRPO / DPO / SFT spec, or a mapping of its
    fields) cannot run on ``device`` here: one message per field, naming the field, empty
    when nothing is refused. The constructor raises these same messages."""
    device_type = torch.device(device).type if device is not None else "cpu"
    found = []
    if _field(spec, "use_vllm", False):
        missing = "" if _installed("vllm") else "; vllm is not installed either"
        found.append(
            "use_vllm: generation with vLLM is not supported by this engine (completions "
            f"are sampled with transformers' generate){missing}"
        )
    else:
        for name, default in _VLLM_ONLY.items():
            if _field(spec, name, default) != default:
                found.append(f"{name}: only takes effect with use_vllm, which is false")
    if _field(spec, "use_liger_loss", False):
        missing = "" if _installed("liger_kernel") else "; liger_kernel is not installed either"
        found.append(
            f"use_liger_loss: the fused Liger kernel loss is not supported by this engine{missing}"
        )
    # AgileRL's preset ``none`` (its benchmarks' default) is no quantisation.
    if _field(spec, "quantization") not in (None, "none"):
        needs = [
            what
            for what, ok in (
                ("bitsandbytes is not installed", _installed("bitsandbytes")),
                ("it needs a CUDA device", device_type == "cuda"),
            )
            if not ok
        ]
        found.append(
            "quantization: quantised base models are not supported by this engine"
            + "".join(f"; {n}" for n in needs)
        )
    if _field(spec, "use_sequence_packing", False):
        found.append(
            "use_sequence_packing: packing several sequences into one row is not supported "
            "by this engine (each sequence is one padded row)"
        )
    if _field(spec, "activation_offload", False) and device_type != "cuda":
        found.append(
            f"activation_offload: needs a CUDA device (on {device_type} activations already "
            "live in host memory)"
        )
    attn = _field(spec, "attn_implementation")
    if attn is not None:
        if attn not in ATTENTION_IMPLEMENTATIONS:
            known = ", ".join(ATTENTION_IMPLEMENTATIONS)
            found.append(f"attn_implementation: unknown {attn!r}; known: {known}")
        elif (package := ATTENTION_IMPLEMENTATIONS[attn]) and not _installed(package):
            found.append(f"attn_implementation: {attn!r} needs {package}, which is not installed")
    return found


def row_chunks(rows: int, size: int | None) -> list[slice]:
    """Slices covering ``rows`` rows, ``size`` at a time (all at once when None)."""
    step = rows if size is None else max(1, size)
    return [slice(start, min(start + step, rows)) for start in range(0, rows, max(step, 1))]


def cosine_factor(step: int, num_epochs: int, warmup_proportion: float) -> float:
    """Learning-rate multiplier of optimiser step ``step`` (0-based): linear warm-up over
    the first ``warmup_proportion`` of ``num_epochs`` steps, then a cosine decay to zero
    at step ``num_epochs`` (zero after it)."""
    warmup = int(round(warmup_proportion * num_epochs))
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, num_epochs - warmup))
    return 0.5 * (1.0 + math.cos(math.pi * progress))


class LLMAlgorithm(EvolvableAlgorithm):
    """Base of LLM fine-tuning algorithms (see the module docstring)."""

    #: The networks are LoRA adapters on the base model the run loads (and sizes); the
    #: file holds only the adapters' weights, checked against their shapes on load.
    sized_on_meta: ClassVar[bool] = False
    #: AgileRL registers no LLM hyperparameter to mutate by default: a manifest names them.
    default_mutable: ClassVar[tuple[str, ...]] = ()
    eval_networks: ClassVar[tuple[str, ...]] = ("actor",)
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "optimizer": (("actor",), "lr")
    }
    #: Loss normalisation over row chunks (GRPO's ``loss_norm`` field): the sum over all
    #: loss units of the step divided by their number, so chunking changes nothing.
    loss_norm: str = "accumulation_window"
    #: Learning-rate schedule (GRPO's ``cosine_lr_schedule_config``): constant.
    cosine_lr_schedule_config: Any = None
    # Set from the bound spec (each algorithm's, e.g. ``GRPOSpec``) before the body runs;
    # the optimizer :meth:`build_optimizers` sets from ``optimizer_specs``.
    batch_size: int
    beta: float
    max_grad_norm: float
    update_epochs: int
    max_model_len: int
    seed: int
    quantization: str | dict[str, Any] | None
    vllm_importance_sampling_cap: float
    lora_target_scope: str | None
    attn_implementation: str | None
    pretrained_model_name_or_path: str | None
    lora_config: Any
    fused_logprobs_chunk_rows: int | None
    fused_loss_chunk_rows: int | None
    reduce_memory_peak: bool
    use_separate_reference_adapter: bool
    calc_position_embeddings: bool
    gradient_checkpointing: bool
    use_liger_loss: bool
    activation_offload: bool
    use_sequence_packing: bool
    vllm_importance_sampling_correction: bool
    optimizer: torch.optim.Optimizer

    def __init__(
        self,
        index: int = 0,
        *,
        tokenizer: Any = None,
        actor_network: Any = None,
        device: str | torch.device = "cpu",
        accelerator: Any = None,
        hp_config: Any = None,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: the algorithm's spec
        (``inspect.signature(GRPO)``). ``tokenizer`` / ``actor_network``: a tokenizer and
        base model (or :class:`~agilerl.llm.adapters.SharedBase`) instead of loading
        ``pretrained_model_name_or_path``."""
        super().__init__(
            index, device=device, accelerator=accelerator, hp_config=hp_config, **options
        )
        problems = refusals({name: getattr(self, name) for name in self.init_args}, self.device)
        if problems:
            raise ValueError(f"{self.name}: " + "; ".join(problems))
        # Agents of one population (same seed) sample their own completions.
        self.rng = np.random.default_rng([self.seed, self.index])
        #: Optimiser steps taken (the learning-rate schedule's position).
        self.updates = 0
        self.tokenizer = tokenizer
        self._build_model(actor_network)
        self.finish_init()

    def check_hyperparameters(self) -> None:
        """What the schema leaves open: chunk sizes of at least one row (null: all rows),
        the LoRA configuration read into its model."""
        from agilerl.models.networks import LoraConfigDict

        for name in ("fused_logprobs_chunk_rows", "fused_loss_chunk_rows"):
            value = getattr(self, name)
            setattr(self, name, None if value is None else positive_int(name, value))
        lora_config = self.lora_config
        if isinstance(lora_config, LoraConfigDict):
            lora_config = lora_config.model_dump(mode="json")
        try:
            # Through JSON: the form a checkpoint holds (a set of targets becomes a list).
            self.lora_config = LoraConfigDict.model_validate(lora_config or {})
        except ValueError as err:
            raise ValueError(f"lora_config: {err}") from None

    def _repr_fields(self) -> dict[str, str]:
        # The base model by the name it was loaded from, else (one given as an object)
        # by its class.
        name = self.pretrained_model_name_or_path
        if name is None and hasattr(self, "shared"):
            name = type(self.shared.base).__name__
        return {"model": repr(str(name))}

    # -- model ----------------------------------------------------------------------------
    def _build_model(self, actor_network: Any) -> None:
        """The shared base (loaded from ``pretrained_model_name_or_path`` unless given)
        and this agent's adapters."""
        from agilerl.llm.adapters import LoraAdapter, SharedBase, peft_lora_config

        if actor_network is None:
            actor_network = self._load_base()
        if self.tokenizer is None:
            self.tokenizer = self._load_tokenizer()
        self.shared = SharedBase.of(actor_network)
        base: Any = self.shared.base  # a transformers model (typed as a plain nn.Module)
        if self.gradient_checkpointing and not getattr(
            base, "supports_gradient_checkpointing", False
        ):
            raise ValueError(f"gradient_checkpointing: {type(base).__name__} does not support it")
        if self.attn_implementation is not None:
            if base.config._attn_implementation != self.attn_implementation:
                base.set_attn_implementation(self.attn_implementation)
        base.to(self.device)
        limit = getattr(base.config, "max_position_embeddings", None)
        #: The longest sequence this agent feeds the model.
        self.context_limit = min(self.max_model_len, limit or self.max_model_len)
        config = peft_lora_config(self.lora_config, base, self.lora_target_scope)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            self.actor = LoraAdapter(self.shared, f"agent{self.index}", self.lora_config, config)
            if self.use_separate_reference_adapter:
                self.reference = LoraAdapter(
                    self.shared, f"ref_agent{self.index}", self.lora_config, config
                )
                self.reference.load_state_dict(self.actor.state_dict())

    def _load_base(self) -> torch.nn.Module:
        from agilerl.llm.models import load_causal_lm

        if self.pretrained_model_name_or_path is None:
            raise ValueError(
                f"pretrained_model_name_or_path: {self.name} needs a model (a local "
                "directory or a Hugging Face hub id) or a pre-built actor_network"
            )
        return load_causal_lm(
            self.pretrained_model_name_or_path, attn_implementation=self.attn_implementation
        )

    def _load_tokenizer(self) -> Any:
        from agilerl.llm.models import load_tokenizer

        if self.pretrained_model_name_or_path is None:
            raise ValueError(
                f"tokenizer: {self.name} needs a tokenizer (or a model to take it from)"
            )
        return load_tokenizer(self.pretrained_model_name_or_path)

    def runtime_args(self) -> dict[str, Any]:
        """Clones and reloaded agents share this agent's base model and tokenizer."""
        return {"tokenizer": self.tokenizer, "actor_network": self.shared}

    def _network_attrs(self) -> list[str]:
        return ["actor", *(["reference"] if self.use_separate_reference_adapter else [])]

    def update_reference_policy(self) -> None:
        """Copy the adapter into the separate reference adapter (the KL anchor moves to
        the current policy). Only with ``use_separate_reference_adapter``."""
        if not self.use_separate_reference_adapter:
            raise ValueError(
                "use_separate_reference_adapter: the reference policy is the base model; "
                "it has no adapter to update"
            )
        self.reference.load_state_dict(self.actor.state_dict())

    # -- forwards -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _policy(self, *, train: bool = False) -> Iterator[Any]:
        """The shared peft model computing this agent's policy (training mode: dropout
        on, gradient checkpointing as this agent asks)."""
        with self.shared.active(self.actor.name) as model:
            model.train(train)
            if train:
                self._set_checkpointing()
            yield model

    @contextlib.contextmanager
    def _reference(self) -> Iterator[Any]:
        """The shared peft model computing the reference policy (evaluation mode)."""
        if self.use_separate_reference_adapter:
            context = self.shared.active(self.reference.name)
        else:
            context = self.shared.disabled(self.actor.name)
        with context as model:
            model.eval()
            yield model

    def _set_checkpointing(self) -> None:
        base: Any = self.shared.base  # a transformers model (typed as a plain nn.Module)
        if base.is_activation_checkpointing != self.gradient_checkpointing:
            if self.gradient_checkpointing:
                base.activation_checkpointing_enable({"use_reentrant": False})
            else:
                base.activation_checkpointing_disable()

    def _position_ids(self, attention_mask: torch.Tensor) -> torch.Tensor | None:
        if not self.calc_position_embeddings:
            return None
        return (attention_mask.long().cumsum(-1) - 1).clamp(min=0)

    def forward_logprobs(
        self, model: Any, ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> torch.Tensor:
        """Token log-probabilities ``[rows, T - 1]`` of ``ids`` under ``model``."""
        from agilerl.algorithms.llm_losses import token_logprobs

        ids = ids.to(self.device)
        attention_mask = attention_mask.to(self.device)
        logits = model(
            input_ids=ids,
            attention_mask=attention_mask,
            position_ids=self._position_ids(attention_mask),
            use_cache=False,
        ).logits
        return token_logprobs(logits, ids)

    def logprobs(
        self, ids: torch.Tensor, attention_mask: torch.Tensor, *, reference: bool = False
    ) -> torch.Tensor:
        """Token log-probabilities ``[rows, T - 1]`` without a gradient, under the policy
        (or the reference policy), ``fused_logprobs_chunk_rows`` rows at a time (one with
        ``reduce_memory_peak``)."""
        context = self._reference() if reference else self._policy()
        with context as model:
            return self.without_grad(
                lambda i, m: self.forward_logprobs(model, i, m), ids, attention_mask
            )

    def without_grad(
        self,
        forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        ids: torch.Tensor,
        attention_mask: torch.Tensor,
    ) -> torch.Tensor:
        """``forward(ids, attention_mask)`` without a gradient, ``fused_logprobs_chunk_rows``
        rows at a time (one with ``reduce_memory_peak``), the parts joined."""
        size = 1 if self.reduce_memory_peak else self.fused_logprobs_chunk_rows
        with torch.no_grad():
            parts = [forward(ids[sl], attention_mask[sl]) for sl in row_chunks(len(ids), size)]
        return torch.cat(parts)

    def clip_length(self, seqs: Any) -> Any:
        """``TokenSequences`` cut to the context limit (``max_model_len``)."""
        from agilerl.llm.batches import TokenSequences

        limit = self.context_limit
        if seqs.input_ids.shape[1] <= limit:
            return seqs
        return TokenSequences(
            seqs.input_ids[:, :limit],
            seqs.attention_mask[:, :limit],
            seqs.loss_mask[:, : limit - 1],
        )

    # -- data parallelism -----------------------------------------------------------------
    @property
    def data_parallel(self) -> Any:
        """This process's share of the run's batches
        (:class:`~agilerl.llm.data_parallel.DataParallel`; one process unless launched on
        several)."""
        from agilerl.llm.data_parallel import DataParallel

        return DataParallel.current()

    # -- optimisation ---------------------------------------------------------------------
    def _current_lr(self, lr_attr: str = "lr") -> float:
        """The learning rate ``lr_attr`` (an optimiser's, per :attr:`optimizer_specs`) at
        this step of the schedule."""
        lr = float(getattr(self, lr_attr))
        config = self.cosine_lr_schedule_config
        if config is None:
            return lr
        return lr * cosine_factor(self.updates, config.num_epochs, config.warmup_proportion)

    def train_step(
        self,
        units: torch.Tensor,
        chunk_loss: Callable[[Any, slice], tuple[torch.Tensor, dict[str, torch.Tensor]]],
    ) -> tuple[float, dict[str, float]]:
        """``update_epochs`` steps of every optimiser on one batch of ``len(units)`` rows.

        ``units[i]``: how many loss units row ``i`` holds (tokens, or 1 per pair);
        ``chunk_loss(model, rows)`` returns the sum of the loss over the units of a row
        slice and sums of metrics over it. Rows go ``fused_loss_chunk_rows`` at a time,
        gradients accumulating; the loss is normalised per :attr:`loss_norm`
        (``accumulation_window``: by all units of the step; ``micro_batch``: each chunk
        by its own units, the chunks averaged). Returns the mean over the epochs of the
        loss minimised and of the metric sums (over every rank's rows, when the batch is
        split over processes: see :mod:`agilerl.llm.data_parallel`)."""
        # Data-parallel (this rank holds one contiguous block of the global batch): the
        # chunks are the global batch's, cut to this block; each is normalised by its
        # global unit count, and the gradients are summed over the ranks, so the step is
        # the one a single process takes on the whole batch. Alone: the block is it all.
        dp = self.data_parallel
        first, rows = dp.rank * len(units), len(units)
        chunks = row_chunks(rows * dp.world_size, self.fused_loss_chunk_rows)
        pieces = [
            (k, slice(max(c.start, first) - first, min(c.stop, first + rows) - first))
            for k, c in enumerate(chunks)
            if c.start < first + rows and c.stop > first
        ]
        chunk_units = torch.zeros(len(chunks), dtype=units.dtype, device=units.device)
        for k, sl in pieces:
            chunk_units[k] = units[sl].sum()
        chunk_units = dp.sum(chunk_units)
        total = dp.sum(units.sum()).clamp(min=1)
        # Every optimiser the algorithm declares steps (LLM-PPO's actor and critic), each
        # at its own learning rate and with its own gradient-norm clip.
        optimizers = [
            (getattr(self, attr), lr_attr) for attr, (_, lr_attr) in self.optimizer_specs.items()
        ]
        loss_value, sums = 0.0, {}
        for _ in range(self.update_epochs):
            for optimizer, _ in optimizers:
                optimizer.zero_grad(set_to_none=True)
            for k, sl in pieces:
                with dp.own_stream(), self._offload(), self._policy(train=True) as model:
                    loss_sum, metrics = chunk_loss(model, sl)
                    if self.loss_norm == "micro_batch":
                        loss = loss_sum / chunk_units[k].clamp(min=1) / len(chunks)
                    else:
                        loss = loss_sum / total
                    loss.backward()
                loss_value += float(loss.detach()) / self.update_epochs
                for key, value in metrics.items():
                    sums[key] = sums.get(key, 0.0) + float(value) / self.update_epochs
            for optimizer, lr_attr in optimizers:
                params = [p for group in optimizer.param_groups for p in group["params"]]
                dp.sum_gradients(params)
                if self.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                for group in optimizer.param_groups:
                    group["lr"] = self._current_lr(lr_attr)
                optimizer.step()
            self.updates += 1
        if not dp.alone:  # every rank reports the global batch's loss and metric sums
            loss_value, *values = dp.sum([loss_value, *sums.values()])
            sums = dict(zip(sums, values, strict=True))
        return loss_value, sums

    def _offload(self) -> Any:
        """Saved activations in pinned host memory (``activation_offload``, CUDA only)."""
        if self.activation_offload:
            return torch.autograd.graph.save_on_cpu(pin_memory=True)
        return contextlib.nullcontext()

    # -- no architecture mutation ----------------------------------------------------------
    def architecture_mutations(self, new_layer: bool | None = None) -> list[str]:
        """None: a pretrained model's architecture is fixed."""
        return []

    def mutate_architecture(self, name: str, seed: int) -> dict[str, Any]:
        raise ValueError(f"{self.name}: a pretrained model has no architecture mutation {name!r}")

    def mutate_activation(self, rng: np.random.Generator) -> dict[str, Any]:
        """Nothing: a pretrained model's activations are fixed."""
        return {}

    def mutate_parameters(self, rng: np.random.Generator, mutation_sd: float) -> int:
        """Nothing: noise on a fine-tuned adapter's weights would undo its training."""
        return 0

    # -- checkpoints ----------------------------------------------------------------------
    def extra_state(self) -> dict[str, Any]:
        return {"updates": self.updates}

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        checkpoints.require(state, {"updates": int}, where)
        self.updates = state["updates"]

    def save_adapter(self, path: str | os.PathLike[str]) -> None:
        """Write the adapter as a peft adapter directory, with the tokenizer beside it:
        ``PeftModel.from_pretrained(base, path)`` loads it onto the base model."""
        path = Path(path)
        self.shared.save(self.actor.name, path)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(str(path))

    # -- to implement (the LLM training loop calls these) ---------------------------------
    def get_action(self, prompts: Any, training: bool = True) -> Any:
        """Completions (token ids and masks) for a batch of tokenised prompts; sampled
        when ``training``, greedy otherwise."""
        raise NotImplementedError(f"{self.name} does not generate completions")

    def learn(self, experiences: Any, /) -> dict[str, float]:
        """One update of the adapter on a batch (completions with rewards, preference
        pairs or supervised targets); returns :attr:`learn_metrics`."""
        raise NotImplementedError

    def test(self, env: Any, loop: int = 1) -> float:
        """The fitness on the environment's test split; appended to ``fitness``."""
        raise NotImplementedError
