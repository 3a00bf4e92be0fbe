"""``GRPO``: Group Relative Policy Optimisation of a LoRA adapter on a reasoning task.

Each prompt gets ``group_size`` completions sampled at ``temperature`` (between
``min_output_tokens`` and ``max_output_tokens`` new tokens, within ``max_model_len``);
their rewards, relative to the group's (``adv_norm``), are the advantages. The loss per
completion token is the clipped surrogate ``-min(r A, clip(r, 1 - clip_coef, 1 + clip_coef)
A)`` plus ``beta`` times the k3 estimate of the KL divergence to the reference policy, with
``r = pi / pi_old`` the importance ratio against the policy that sampled (its
log-probabilities recomputed before the first of ``update_epochs`` steps).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm import LLMAlgorithm
from agilerl.algorithms.hyperparameters import positive_int, unit_interval
from agilerl.llm.batches import Completions, Experience, PromptBatch

#: ``importance_sampling_level`` -> the ratio's level. Completions here are one turn, so
#: a turn is the whole trajectory: both take one (length-normalised) ratio per sequence.
IS_LEVELS = {None: "token", "token": "token", "turn": "sequence", "trajectory": "sequence"}


class GRPO(LLMAlgorithm):
    """GRPO (see the module docstring).

    Advantages: per group, ``adv_norm`` ``mean_std`` ``(r - mean) / (std + 1e-8)`` (sample
    std), ``mean`` ``r - mean``, ``none`` ``r``; then ``whiten_advantages`` standardises
    them over the batch, ``adv_clip_range`` clips them and ``filter_zero_adv`` drops
    completions whose advantage is zero (a group that all scored alike) from the loss.
    ``importance_sampling_level`` ``token`` (and null) takes one ratio per token,
    ``turn`` / ``trajectory`` one per completion (a completion is one turn);
    ``advantage_granularity`` and ``turn_advantage_trajectory_fallback`` choose between
    turn and trajectory advantages, which are the same for single-turn completions.
    ``loss_norm``: ``micro_batch`` normalises each row chunk (``fused_loss_chunk_rows``) by
    its own completion tokens and averages the chunks; ``accumulation_window`` divides the
    whole step's token sum by its token count. ``cosine_lr_schedule_config``: warm-up and
    cosine decay over ``num_epochs`` optimiser steps.
    """

    init_args: ClassVar[tuple[str, ...]] = (
        *LLMAlgorithm.init_args,
        "group_size",
        "clip_coef",
        "temperature",
        "max_output_tokens",
        "min_output_tokens",
        "cosine_lr_schedule_config",
        "use_vllm",
        "vllm_config",
        "adv_norm",
        "importance_sampling_level",
        "advantage_granularity",
        "whiten_advantages",
        "adv_clip_range",
        "filter_zero_adv",
        "turn_advantage_trajectory_fallback",
        "loss_norm",
    )
    learn_metrics: ClassVar[dict[str, str]] = {
        "loss": "GRPO loss minimised (clipped surrogate plus beta times the KL)",
        "kl": "mean k3 KL to the reference policy per completion token",
        "reward": "mean reward of the batch's completions",
        "clip_fraction": "share of completion tokens whose ratio was clipped",
        "completion_length": "mean completion length in tokens",
    }
    main_loss: ClassVar[str] = "loss"

    def __init__(
        self,
        index: int = 0,
        *,
        group_size: int,
        lr: float = 5e-06,
        clip_coef: float = 0.2,
        temperature: float = 0.9,
        max_output_tokens: int | None = 1024,
        min_output_tokens: int | None = None,
        cosine_lr_schedule_config: Any = None,
        use_vllm: bool = False,
        vllm_config: Any = None,
        adv_norm: str = "mean_std",
        importance_sampling_level: str | None = None,
        advantage_granularity: str = "auto",
        whiten_advantages: bool = False,
        adv_clip_range: float | None = None,
        filter_zero_adv: bool = False,
        turn_advantage_trajectory_fallback: bool = True,
        loss_norm: str = "micro_batch",
        **common: Any,
    ) -> None:
        from agilerl._generated.llm_algorithm_schema import CosineLRScheduleConfig

        self.group_size = positive_int("group_size", group_size)
        self.clip_coef = unit_interval("clip_coef", clip_coef)
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature!r}")
        self.temperature = float(temperature)
        self.max_output_tokens = (
            None
            if max_output_tokens is None
            else positive_int("max_output_tokens", max_output_tokens)
        )
        fewest = 0 if min_output_tokens is None else int(min_output_tokens)
        if fewest < 0 or (self.max_output_tokens is not None and fewest > self.max_output_tokens):
            raise ValueError(
                f"min_output_tokens must lie in [0, max_output_tokens ({max_output_tokens})], "
                f"got {min_output_tokens}"
            )
        self.min_output_tokens = min_output_tokens
        self.cosine_lr_schedule_config = (
            None
            if cosine_lr_schedule_config is None
            else CosineLRScheduleConfig.model_validate(
                cosine_lr_schedule_config.model_dump()
                if hasattr(cosine_lr_schedule_config, "model_dump")
                else cosine_lr_schedule_config
            )
        )
        self.use_vllm, self.vllm_config = bool(use_vllm), vllm_config
        self.adv_norm = _choice("adv_norm", adv_norm, llm_losses.ADV_NORMS)
        self.importance_sampling_level = _choice(
            "importance_sampling_level", importance_sampling_level, IS_LEVELS
        )
        self.advantage_granularity = _choice(
            "advantage_granularity", advantage_granularity, ("auto", "trajectory", "turn")
        )
        self.whiten_advantages = bool(whiten_advantages)
        if adv_clip_range is not None and not adv_clip_range > 0:
            raise ValueError(f"adv_clip_range must be positive, got {adv_clip_range!r}")
        self.adv_clip_range = adv_clip_range
        self.filter_zero_adv = bool(filter_zero_adv)
        self.turn_advantage_trajectory_fallback = bool(turn_advantage_trajectory_fallback)
        self.loss_norm = _choice("loss_norm", loss_norm, ("micro_batch", "accumulation_window"))
        super().__init__(
            index, lr=lr, own_fields={"use_vllm": use_vllm, "vllm_config": vllm_config}, **common
        )

    # -- acting ---------------------------------------------------------------------------
    def get_action(self, prompts: PromptBatch, training: bool = True) -> Completions:
        """``group_size`` completions per prompt sampled at ``temperature`` when
        ``training`` (from this agent's seeded stream), else one greedy completion."""
        from transformers import GenerationConfig, LogitsProcessorList

        from agilerl.llm.sampling import RowSampler

        group = self.group_size if training else 1
        ids = prompts.input_ids.to(self.device).repeat_interleave(group, 0)
        mask = prompts.attention_mask.to(self.device).repeat_interleave(group, 0)
        prompt_length = ids.shape[1]
        room = self.context_limit - prompt_length
        if room < 1:
            raise ValueError(
                f"max_model_len: prompts of {prompt_length} tokens leave no room for a "
                f"completion within {self.context_limit} tokens"
            )
        new_tokens = room if self.max_output_tokens is None else min(room, self.max_output_tokens)
        pad, eos = self._special_ids()
        # Sampling is greedy decoding over Gumbel-perturbed scores (:class:`RowSampler`):
        # exact sampling at ``temperature``, each completion from its own stream.
        config = GenerationConfig(
            do_sample=False,
            max_new_tokens=new_tokens,
            min_new_tokens=min(self.min_output_tokens or 0, new_tokens),
            pad_token_id=pad,
            eos_token_id=eos,
        )
        processors = []
        if training:
            draw = int(self.rng.integers(2**63))
            first = prompts.first_row * group
            processors.append(RowSampler(draw, range(first, first + len(ids)), self.temperature))
        with torch.no_grad(), self._policy() as model:
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                generation_config=config,
                logits_processor=LogitsProcessorList(processors),
            )
        return self._completions(out, mask, prompt_length, group, eos)

    def _special_ids(self) -> tuple[int, int | None]:
        tok = self.tokenizer
        eos = tok.eos_token_id
        pad = tok.pad_token_id if tok.pad_token_id is not None else eos
        if pad is None:
            raise ValueError("tokenizer: it has neither a pad token nor an end-of-sequence token")
        return pad, eos

    def _completions(
        self,
        out: torch.Tensor,
        prompt_mask: torch.Tensor,
        prompt_length: int,
        group: int,
        eos: int | None,
    ) -> Completions:
        """Masks of generated sequences: a completion runs up to its first
        end-of-sequence token (included); what follows is padding."""
        tokens = out[:, prompt_length:]
        if eos is None:
            valid = torch.ones_like(tokens, dtype=torch.bool)
        else:
            ended_before = (tokens == eos).long().cumsum(1) - (tokens == eos).long()
            valid = ended_before == 0
        loss_mask = torch.zeros(out.shape[0], out.shape[1] - 1, dtype=torch.bool, device=out.device)
        loss_mask[:, prompt_length - 1 :] = valid
        attention = torch.cat([prompt_mask.bool(), valid], 1).long()
        texts = self.tokenizer.batch_decode(
            [row[keep] for row, keep in zip(tokens, valid, strict=True)], skip_special_tokens=True
        )
        return Completions(
            ids=out, attention_mask=attention, loss_mask=loss_mask,
            prompt_length=prompt_length, group_size=group, texts=texts,
        )  # fmt: skip

    # -- learning -------------------------------------------------------------------------
    def advantages(self, rewards: torch.Tensor) -> torch.Tensor:
        """Advantages ``[B * G]`` of rewards ``[B, G]`` (see the class docstring)."""
        return llm_losses.group_advantages(
            rewards, self.adv_norm, whiten=self.whiten_advantages, clip_range=self.adv_clip_range
        )

    def learn(self, experience: Experience) -> dict[str, float]:
        """``update_epochs`` optimiser steps on the completions and their rewards; returns
        :attr:`learn_metrics` (no step when ``filter_zero_adv`` leaves no completion)."""
        c = experience.completions
        dp = self.data_parallel
        rewards = experience.rewards.to(self.device).float()
        # Data-parallel: the advantages (whitening included) and the reported means are
        # the global batch's; this rank keeps its own rows' advantages.
        everyone = dp.gather(rewards)
        mine = dp.share(len(everyone) * self.group_size, "rows")
        adv = self.advantages(everyone)[mine]
        mask = c.loss_mask.to(self.device).float()
        if self.filter_zero_adv:
            mask = mask * (adv != 0).float()[:, None]
        lengths = dp.gather(c.loss_mask.to(self.device).sum(1).float())
        metrics = {
            "reward": float(everyone.mean()),
            "completion_length": float(lengths.mean()),
        }
        tokens = mask.sum(1)
        count = float(dp.sum(tokens.sum()))
        if not count > 0:
            return {"loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, **metrics}
        ids, attention = c.ids.to(self.device), c.attention_mask.to(self.device)
        old = self.logprobs(ids, attention)
        ref = self.logprobs(ids, attention, reference=True) if self.beta > 0 else None
        level = IS_LEVELS[self.importance_sampling_level]

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            loss, kl, clipped = llm_losses.grpo_token_loss(
                logp, old[sl], None if ref is None else ref[sl], adv[sl], mask[sl],
                clip_coef=self.clip_coef, beta=self.beta, level=level,
            )  # fmt: skip
            return loss.sum(), {"kl": kl.sum().detach(), "clipped": clipped.sum()}

        loss, sums = self.train_step(tokens, chunk_loss)
        count = max(count, 1.0)
        return {
            "loss": loss,
            "kl": sums["kl"] / count,
            "clip_fraction": sums["clipped"] / count,
            **metrics,
        }

    def test(self, env: Any, loop: int = 1) -> float:
        """Mean reward of greedy completions over the environment's test split (``loop``
        passes; greedy decoding makes them equal), appended to ``fitness``."""
        total, count = 0.0, 0
        for _ in range(loop):
            for prompts in env.test_batches():
                rewards = env.rewards(prompts, self.get_action(prompts, training=False))
                total += float(rewards.sum())
                count += rewards.numel()
        if not self.data_parallel.alone:  # each process scored its share of the split
            total, count = self.data_parallel.sum([total, count])
        fitness = total / max(count, 1)
        self.fitness.append(fitness)
        return fitness


def _choice(field: str, value: Any, allowed: Any) -> Any:
    if value not in allowed:
        raise ValueError(f"{field} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value
