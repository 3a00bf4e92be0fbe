"""The tensor maths of LLM fine-tuning: pure functions of tensors, no model.

Shapes follow :mod:`agilerl.llm.batches`: token log-probabilities and loss masks are
``[rows, T - 1]`` (prediction ``j`` scores token ``j + 1``); rewards of GRPO are
``[prompts, group]``.
"""

from __future__ import annotations

import torch
from torch.nn import functional

#: Added to a standard deviation before dividing by it.
EPS = 1e-8


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """``log p(ids[:, j + 1] | ids[:, :j + 1])``: ``[rows, T - 1]`` from ``logits`` ``[rows,
    T, V]``. Computed as ``logit - logsumexp`` so no ``[rows, T, V]`` log-softmax copy is
    kept beside the logits."""
    logits = logits[:, :-1].float()
    taken = logits.gather(-1, ids[:, 1:, None]).squeeze(-1)
    return taken - logits.logsumexp(-1)


def masked_sum(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row sum of ``values`` where ``mask`` holds: ``[rows]``."""
    return (values * mask).sum(-1)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-row mean of ``values`` where ``mask`` holds (0 for a row with none): ``[rows]``."""
    return masked_sum(values, mask) / mask.sum(-1).clamp(min=1)


# -- GRPO ----------------------------------------------------------------------------------
def _group_std(rewards: torch.Tensor) -> torch.Tensor:
    """Sample standard deviation of each group (Bessel-corrected; 0 for groups of one)."""
    if rewards.shape[1] < 2:
        return torch.zeros(rewards.shape[0], 1, dtype=rewards.dtype, device=rewards.device)
    return rewards.std(dim=1, keepdim=True)


#: ``adv_norm`` -> advantages of rewards ``[B, G]`` relative to their group.
ADV_NORMS = {
    "mean_std": lambda r: (r - r.mean(1, keepdim=True)) / (_group_std(r) + EPS),
    "mean": lambda r: r - r.mean(1, keepdim=True),
    "none": lambda r: r,
}


def group_advantages(
    rewards: torch.Tensor,
    adv_norm: str = "mean_std",
    *,
    whiten: bool = False,
    clip_range: float | None = None,
) -> torch.Tensor:
    """GRPO advantages ``[B * G]`` (row ``b * G + g``) of rewards ``[B, G]``: each reward
    relative to its group (``adv_norm``: minus the group mean and over the group's sample
    standard deviation, minus the mean only, or the raw reward), then optionally whitened
    over the whole batch and clipped to ``[-clip_range, clip_range]``."""
    adv = ADV_NORMS[adv_norm](rewards.float()).reshape(-1)
    if whiten and adv.numel() > 1:
        adv = (adv - adv.mean()) / (adv.std() + EPS)
    if clip_range is not None:
        adv = adv.clamp(-clip_range, clip_range)
    return adv


def importance_ratio(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor, level: str
) -> torch.Tensor:
    """``pi / pi_old`` per token ``[rows, T - 1]``. ``"token"``: each token's own ratio;
    ``"sequence"``: one ratio per row, the geometric mean of its tokens' ratios
    ``exp(mean_t(log pi - log pi_old))`` (length-normalised, as GSPO), on every token."""
    log_ratio = logprobs - old_logprobs
    if level == "token":
        return log_ratio.exp()
    if level == "sequence":
        return masked_mean(log_ratio, mask).exp()[:, None].expand_as(log_ratio)
    raise ValueError(f"importance sampling level must be 'token' or 'sequence', got {level!r}")


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float
) -> torch.Tensor:
    """Per-token loss of the clipped objective, ``-min(r A, clip(r, 1 - e, 1 + e) A)``, with
    ``advantages`` ``[rows]`` broadcast over each row's tokens: ``[rows, T - 1]``."""
    adv = advantages[:, None]
    clipped = ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef)
    return -torch.minimum(ratio * adv, clipped * adv)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of ``KL(pi || pi_ref)`` from the sampled tokens:
    ``exp(d) - d - 1`` with ``d = log pi_ref - log pi`` (non-negative, unbiased)."""
    d = ref_logprobs - logprobs
    return d.exp() - d - 1.0


def grpo_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_coef: float,
    beta: float,
    level: str = "token",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GRPO per-token loss ``[rows, T - 1]`` (clipped surrogate plus ``beta`` times the k3
    KL to the reference; zero outside ``mask``), the per-token KL, and whether each
    token's ratio was clipped."""
    ratio = importance_ratio(logprobs, old_logprobs, mask, level)
    loss = clipped_surrogate(ratio, advantages, clip_coef)
    if ref_logprobs is None:
        kl = torch.zeros_like(loss)
    else:
        kl = k3_kl(logprobs, ref_logprobs)
        loss = loss + beta * kl
    clipped = (ratio - 1.0).abs() > clip_coef
    return loss * mask, kl * mask, clipped & mask.bool()


# -- DPO -----------------------------------------------------------------------------------
def dpo_margins(
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Implicit rewards ``beta * (log pi - log pi_ref)`` of the chosen and the rejected
    responses (sequence log-probabilities ``[pairs]``)."""
    return beta * (chosen - ref_chosen), beta * (rejected - ref_rejected)


def dpo_loss(chosen_reward: torch.Tensor, rejected_reward: torch.Tensor) -> torch.Tensor:
    """Per-pair sigmoid preference loss ``-log sigmoid(r_chosen - r_rejected)``."""
    return -functional.logsigmoid(chosen_reward - rejected_reward)


# -- SFT -----------------------------------------------------------------------------------
def masked_nll(logprobs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Token cross-entropy where ``mask`` holds: (sum of ``-log p`` over the masked
    tokens, how many there are). Prompt and padding predictions carry no loss."""
    return -(logprobs * mask).sum(), mask.sum()
