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
from agilerl.algorithms.core.llm_sampling import CompletionSampler, choice
from agilerl.algorithms.hyperparameters import positive_int, unit_interval
from agilerl.llm.batches import Experience

#: ``importance_sampling_level`` -> the ratio's level. Completions here are one turn, so
#: a turn is the whole trajectory: both take one (length-normalised) ratio per sequence.
IS_LEVELS = {None: "token", "token": "token", "turn": "sequence", "trajectory": "sequence"}


class GRPO(CompletionSampler):
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
    whole step's token sum by its token count.

    GSPO and CISPO are this class with another :attr:`loss_name` (and, for GSPO, other
    :attr:`is_levels`): the rollout, the advantages and the optimisation are the same.
    """

    init_args: ClassVar[tuple[str, ...]] = (
        *CompletionSampler.init_args,
        "group_size",
        "clip_coef",
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
    #: The loss, by its name in :data:`~agilerl.algorithms.llm_losses.GROUP_LOSSES`.
    loss_name: ClassVar[str] = "grpo"
    #: ``importance_sampling_level`` values accepted -> the ratio's level.
    is_levels: ClassVar[dict[str | None, str]] = IS_LEVELS

    def __init__(
        self,
        index: int = 0,
        *,
        group_size: int,
        lr: float = 5e-06,
        clip_coef: Any = 0.2,
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
        self.group_size = positive_int("group_size", group_size)
        self.clip_coef = self._clip_coef(clip_coef)
        self.adv_norm = choice("adv_norm", adv_norm, llm_losses.ADV_NORMS)
        self.importance_sampling_level = choice(
            "importance_sampling_level", importance_sampling_level, self.is_levels
        )
        self.advantage_granularity = choice(
            "advantage_granularity", advantage_granularity, ("auto", "trajectory", "turn")
        )
        self.whiten_advantages = bool(whiten_advantages)
        if adv_clip_range is not None and not adv_clip_range > 0:
            raise ValueError(f"adv_clip_range must be positive, got {adv_clip_range!r}")
        self.adv_clip_range = adv_clip_range
        self.filter_zero_adv = bool(filter_zero_adv)
        self.turn_advantage_trajectory_fallback = bool(turn_advantage_trajectory_fallback)
        self.loss_norm = choice("loss_norm", loss_norm, ("micro_batch", "accumulation_window"))
        super().__init__(index, lr=lr, **common)

    @staticmethod
    def _clip_coef(clip_coef: Any) -> Any:
        """GRPO's and GSPO's clip: a coefficient in [0, 1] (CISPO's may be a pair)."""
        return unit_interval("clip_coef", clip_coef)

    @property
    def samples_per_prompt(self) -> int:
        """The group: ``group_size`` completions of each prompt."""
        return self.group_size

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
        level = self.is_levels[self.importance_sampling_level]
        token_loss = llm_losses.GROUP_LOSSES[self.loss_name]

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            loss, kl, clipped = token_loss(
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
