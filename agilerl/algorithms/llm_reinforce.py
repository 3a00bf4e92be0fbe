"""``LLMREINFORCE``: REINFORCE with return batch normalisation (ReBN) for reasoning
fine-tuning, AgileRL's LLM REINFORCE baseline.

One completion per prompt (no group), sampled as GRPO's are
(:class:`~agilerl.algorithms.core.llm_sampling.CompletionSampler`). Each completion's
reward sits on every one of its tokens, less ``beta`` times the k1 KL ``log pi_old - log
pi_ref`` (the only place the KL enters). Returns: at ``token`` granularity each token's
discounted sum ``G_t = r_t + gamma G_{t+1}`` of the shaped rewards; at ``turn``
granularity one per turn: the mean of its shaped rewards ``r_k``, discounted over the
turns ``G_k = r_k + gamma G_{k+1}`` (a single-turn completion is one turn; a multi-turn
episode's turn reward sits on every token of its turn,
:mod:`agilerl.families.llm.multiturn`). ReBN z-scores the returns over every unit of the
batch (GEM, Liu et al. 2025), so no per-prompt group is needed. The loss is the clipped surrogate ``max(-A r, -A
clip(r, 1 - clip_coef, 1 + clip_coef))`` averaged over the units of the importance ratio
(``importance_sampling_level``: each token; ``turn``, each turn (a single-turn
completion: the completion) with its tokens' log-ratios summed or averaged per
``turn_ratio_pooling``; ``trajectory``, the completion or episode, averaged).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm_sampling import (
    TurnCredit,
    turn_rewards_of,
    turns_per_row,
)
from agilerl.llm.batches import Experience, turn_ids_of

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.llm_reinforce_schema import LLMREINFORCESpec
else:
    from agilerl.models.algorithms.llmreinforce import LLMREINFORCESpec

#: (``importance_sampling_level``, ``turn_ratio_pooling``) -> the ratio's level in
#: :data:`~agilerl.algorithms.llm_losses.RATIO_LEVELS`.
RATIO_LEVELS = {
    ("token", "sum"): "token",
    ("token", "mean"): "token",
    ("turn", "sum"): "turn_product",
    ("turn", "mean"): "turn",
    ("trajectory", "sum"): "sequence",
    ("trajectory", "mean"): "sequence",
}


class LLMREINFORCE(TurnCredit, spec=LLMREINFORCESpec):
    """LLM-REINFORCE (see the module docstring; the returns' unit: :class:`TurnCredit`)."""

    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "REINFORCE loss minimised (clipped surrogate on batch-normalised returns)",
        "kl": "mean k1 KL (log pi_old - log pi_ref) to the reference per completion token",
        "entropy": "mean negative log-probability of the sampled completion tokens",
        "reward": "mean reward of the batch's completions",
        "clip_fraction": "share of the ratio's units that were clipped",
        "completion_length": "mean completion length in tokens",
    }
    main_loss: ClassVar[str | None] = "loss"

    # Set from the bound spec before the body runs.
    lr: float
    clip_coef: float
    gamma: float
    importance_sampling_level: str
    turn_ratio_pooling: str

    def learn(self, experience: Experience) -> dict[str, float]:
        """``update_epochs`` optimiser steps on the completions and their rewards
        ``[B, 1]``; returns :attr:`learn_metrics`."""
        c = experience.completions
        dp = self.data_parallel
        rewards = experience.rewards.to(self.device).float().reshape(-1)
        mask = c.loss_mask.to(self.device).float()
        turn_ids = turn_ids_of(c).to(self.device)
        # Each turn's reward on every token of its turn (a completion is one turn).
        token_rewards = llm_losses.on_turn_tokens(
            turn_rewards_of(experience).to(self.device).float(), turn_ids
        )
        ids, attention = c.ids.to(self.device), c.attention_mask.to(self.device)
        old = self.logprobs(ids, attention)
        ref = self.logprobs(ids, attention, reference=True) if self.beta > 0 else None
        shaped = llm_losses.shaped_rewards(token_rewards, old, ref, mask, self.beta)
        returns, units = llm_losses.RETURNS[self.granularity(turns_per_row(turn_ids))](
            shaped, mask, self.gamma, turn_ids
        )
        # Data-parallel: the normalisation is the global batch's (its moments summed).
        moments = dp.sum(llm_losses.return_moments(returns, units))
        adv = llm_losses.rebn(returns, mask, moments)
        level = RATIO_LEVELS[(self.importance_sampling_level, self.turn_ratio_pooling)]
        share, _ = llm_losses.UNITS[level]
        k1 = torch.zeros_like(old) if ref is None else old - ref
        # The reported means are the global batch's: sums over every rank's rows.
        tokens, logp_sum, kl_sum, reward_sum, rows = (float(v) for v in dp.sum(torch.stack([
            mask.sum(), (old * mask).sum(), (k1 * mask).sum(), rewards.sum(),
            torch.tensor(float(len(rewards)), device=self.device),
        ])))  # fmt: skip
        metrics = {
            "reward": reward_sum / max(rows, 1.0),
            "completion_length": tokens / max(rows, 1.0),
            "kl": kl_sum / max(tokens, 1.0),
            "entropy": -logp_sum / max(tokens, 1.0),
        }

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            loss, _, clipped = llm_losses.reinforce_loss(
                logp, old[sl], adv[sl], mask[sl], clip_coef=self.clip_coef, level=level,
                turn_ids=turn_ids[sl],
            )  # fmt: skip
            return loss.sum(), {"clipped": clipped.sum().detach()}

        row_units = share(mask, turn_ids).sum(1)
        count = float(dp.sum(row_units.sum()))
        if not count > 0:  # no completion token anywhere: nothing to learn from
            return {"loss": 0.0, "clip_fraction": 0.0, **metrics}
        loss, totals = self.train_step(row_units, chunk_loss)
        return {"loss": loss, "clip_fraction": totals["clipped"] / count, **metrics}
