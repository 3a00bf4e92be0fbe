"""The tensor maths of LLM fine-tuning: pure functions of tensors, no model.

Shapes follow :mod:`agilerl.llm.batches`: token log-probabilities and loss masks are
``[rows, T - 1]`` (prediction ``j`` scores token ``j + 1``); rewards of GRPO are
``[prompts, group]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


# -- GRPO and its kin (GSPO, CISPO) ----------------------------------------------------------------------------------
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


def single_turn(mask: torch.Tensor) -> torch.Tensor:
    """The turn ids ``[rows, T - 1]`` of single-turn completions: 0 on every masked
    prediction, -1 elsewhere (:func:`agilerl.llm.batches.turn_ids_of`)."""
    return torch.where(mask.bool(), 0, -1)


def turn_onehot(turn_ids: torch.Tensor, turns: int | None = None) -> torch.Tensor:
    """``[rows, T - 1, K]``: 1 where prediction ``j`` belongs to turn ``k`` (``turn_ids``
    -1 belongs to none); ``K`` = ``turns``, or one more than the largest turn id."""
    count = int(turn_ids.max()) + 1 if turns is None else turns
    return (turn_ids[..., None] == torch.arange(max(count, 1), device=turn_ids.device)).float()


def per_turn_sum(
    values: torch.Tensor, turn_ids: torch.Tensor, turns: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's sum of ``values`` ``[rows, T - 1]`` over each turn's predictions, and how
    many predictions each turn holds: two ``[rows, K]`` tensors."""
    onehot = turn_onehot(turn_ids, turns)
    return (values[..., None] * onehot).sum(1), onehot.sum(1)


def on_turn_tokens(per_turn: torch.Tensor, turn_ids: torch.Tensor) -> torch.Tensor:
    """Broadcast ``per_turn`` ``[rows, K]`` to the predictions of each turn ``[rows, T - 1]``
    (zero off the turns)."""
    taken = per_turn.gather(1, turn_ids.clamp(min=0).long())
    return taken * (turn_ids >= 0)


def _turn_mean(values: torch.Tensor, turn_ids: torch.Tensor) -> torch.Tensor:
    """Each prediction's turn's mean of ``values`` (zero off the turns)."""
    sums, counts = per_turn_sum(values, turn_ids)
    return on_turn_tokens(sums / counts.clamp(min=1), turn_ids)


def _turn_sum(values: torch.Tensor, turn_ids: torch.Tensor) -> torch.Tensor:
    """Each prediction's turn's sum of ``values`` (zero off the turns)."""
    return on_turn_tokens(per_turn_sum(values, turn_ids)[0], turn_ids)


def importance_ratio(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    mask: torch.Tensor,
    level: str,
    turn_ids: torch.Tensor | None = None,
) -> torch.Tensor:
    """``pi / pi_old`` per token ``[rows, T - 1]`` at a level of :data:`RATIO_LEVELS`
    (``turn_ids``: the turn of each prediction; None: single-turn completions)."""
    if level not in RATIO_LEVELS:
        known = ", ".join(map(repr, RATIO_LEVELS))
        raise ValueError(f"importance sampling level must be one of {known}, got {level!r}")
    log_ratio = logprobs - old_logprobs
    turns = single_turn(mask) if turn_ids is None else turn_ids
    return RATIO_LEVELS[level](log_ratio, mask, turns).exp().expand_as(log_ratio)


#: Level -> the log-ratio of each token ``[rows, T - 1]`` (or ``[rows, 1]``, one per row)
#: from the token log-ratios, the mask and the turn ids. ``"token"``: each token's own;
#: ``"sequence"``: their mean over the row, so the ratio is the geometric mean of the
#: tokens' (length normalised, as GSPO's); ``"product"``: their sum, the ratio of the
#: whole completion; ``"turn"`` / ``"turn_product"``: their mean / sum over the tokens of
#: the token's turn (a single-turn completion is one turn: ``"sequence"`` / ``"product"``).
RATIO_LEVELS = {
    "token": lambda log_ratio, mask, turns: log_ratio,
    "sequence": lambda log_ratio, mask, turns: masked_mean(log_ratio, mask)[:, None],
    "product": lambda log_ratio, mask, turns: masked_sum(log_ratio, mask)[:, None],
    "turn": lambda log_ratio, mask, turns: _turn_mean(log_ratio * mask, turns),
    "turn_product": lambda log_ratio, mask, turns: _turn_sum(log_ratio * mask, turns),
}


def clip_bounds(clip_coef: float | Sequence[float]) -> tuple[float, float]:
    """The ratio bounds of a clipping coefficient: ``e`` -> ``(1 - e, 1 + e)``; a pair
    ``[low, high]`` is the bounds themselves (CISPO's)."""
    if isinstance(clip_coef, (int, float)):
        return 1.0 - clip_coef, 1.0 + clip_coef
    low, high = (float(v) for v in clip_coef)
    if low > high:
        raise ValueError(f"clip_coef: the bounds [low, high] need low <= high, got {clip_coef}")
    return low, high


def clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_coef: float
) -> torch.Tensor:
    """Per-token loss of the clipped objective, ``-min(r A, clip(r, 1 - e, 1 + e) A)``, with
    ``advantages`` ``[rows]`` broadcast over each row's tokens (or ``[rows, T - 1]``, one
    per token): ``[rows, T - 1]``."""
    adv = per_token(advantages)
    clipped = ratio.clamp(1.0 - clip_coef, 1.0 + clip_coef)
    return -torch.minimum(ratio * adv, clipped * adv)


def per_token(values: torch.Tensor) -> torch.Tensor:
    """``[rows]`` (one per row) as ``[rows, 1]``, which broadcasts over the row's tokens;
    ``[rows, T - 1]`` as it is."""
    return values.reshape(len(values), -1)


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of ``KL(pi || pi_ref)`` from the sampled tokens:
    ``exp(d) - d - 1`` with ``d = log pi_ref - log pi`` (non-negative, unbiased)."""
    d = ref_logprobs - logprobs
    return d.exp() - d - 1.0


def _with_kl(
    policy: torch.Tensor,
    logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    ratio: torch.Tensor,
    mask: torch.Tensor,
    bounds: tuple[float, float],
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The policy term plus ``beta`` times the k3 KL, masked; the KL; the clipped tokens."""
    if ref_logprobs is None:
        kl = torch.zeros_like(policy)
    else:
        kl = k3_kl(logprobs, ref_logprobs)
        policy = policy + beta * kl
    clipped = (ratio < bounds[0]) | (ratio > bounds[1])
    return policy * mask, kl * mask, clipped & mask.bool()


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
    turn_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GRPO per-token loss ``[rows, T - 1]`` (clipped surrogate plus ``beta`` times the k3
    KL to the reference; zero outside ``mask``), the per-token KL, and whether each
    token's ratio was clipped. ``advantages``: ``[rows]`` or per token ``[rows, T - 1]``;
    ``turn_ids``: the predictions' turns (the ``"turn"`` level; None: single-turn)."""
    ratio = importance_ratio(logprobs, old_logprobs, mask, level, turn_ids)
    loss = clipped_surrogate(ratio, advantages, clip_coef)
    bounds = clip_bounds(clip_coef)
    return _with_kl(loss, logprobs, ref_logprobs, ratio, mask, bounds, beta)


def gspo_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_coef: float,
    beta: float,
    level: str = "sequence",
    turn_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """GSPO (Zheng et al. 2025): GRPO's loss with one ratio per completion, the geometric
    mean of its tokens' ``s = exp(mean_t(log pi - log pi_old))``, clipped at the sequence
    level: every token of a completion carries ``-min(s A, clip(s) A)`` (plus ``beta`` k3),
    so the row's token mean is the sequence's term. ``level`` must be ``"sequence"`` (or
    ``"turn"``: one ratio per turn of a multi-turn episode)."""
    if level not in ("sequence", "turn"):
        raise ValueError(f"importance sampling level: GSPO's ratio is per sequence, got {level!r}")
    return grpo_token_loss(
        logprobs, old_logprobs, ref_logprobs, advantages, mask,
        clip_coef=clip_coef, beta=beta, level=level, turn_ids=turn_ids,
    )  # fmt: skip


def cispo_token_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_coef: float | Sequence[float],
    beta: float,
    level: str = "token",
    turn_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """CISPO (MiniMax-M1, 2025): ``-sg(clip(r, low, high)) A log pi`` per token (plus
    ``beta`` k3): the clipped ratio only weighs the REINFORCE term, without a gradient,
    so a clipped token still has one (PPO's clip zeroes it). ``clip_coef``: ``e`` for
    ``[1 - e, 1 + e]`` or the pair ``[low, high]``."""
    bounds = clip_bounds(clip_coef)
    ratio = importance_ratio(logprobs, old_logprobs, mask, level, turn_ids)
    weight = ratio.detach().clamp(*bounds)
    loss = -(weight * per_token(advantages) * logprobs)
    return _with_kl(loss, logprobs, ref_logprobs, ratio, mask, bounds, beta)


#: Loss of each group-relative algorithm (``loss_name`` of GRPO, GSPO, CISPO): token
#: log-probabilities, sampling-policy and reference ones, advantages ``[rows]``, the mask
#: -> per-token loss, KL and clipped tokens.
GROUP_LOSSES = {"grpo": grpo_token_loss, "gspo": gspo_token_loss, "cispo": cispo_token_loss}


# -- multi-turn episodes (GRPO and its kin) ------------------------------------------------
def turns_played(turn_ids: torch.Tensor, turns: int) -> torch.Tensor:
    """``[rows, turns]``: whether each episode played each turn (took an action in it)."""
    return turn_onehot(turn_ids, turns).sum(1) > 0


def _present_mean(values: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    return (values * present).sum(1, keepdim=True) / present.sum(1, keepdim=True).clamp(min=1)


def _present_std(values: torch.Tensor, present: torch.Tensor) -> torch.Tensor:
    """Sample standard deviation over the present members (0 with fewer than two)."""
    count = present.sum(1, keepdim=True)
    centred = (values - _present_mean(values, present)) * present
    return ((centred**2).sum(1, keepdim=True) / (count - 1).clamp(min=1)).sqrt()


#: ``adv_norm`` -> advantages of values ``[B, G, K]`` relative to the group members that
#: have a value (``present``, float ``[B, G, K]``): the same norms as :data:`ADV_NORMS`,
#: each turn index normalised on its own.
PRESENT_NORMS = {
    "mean_std": lambda r, p: (r - _present_mean(r, p)) / (_present_std(r, p) + EPS),
    "mean": lambda r, p: r - _present_mean(r, p),
    "none": lambda r, p: r,
}


def turn_group_advantages(
    turn_rewards: torch.Tensor,
    played: torch.Tensor,
    group_size: int,
    adv_norm: str = "mean_std",
    *,
    fallback: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-turn group-relative advantages ``[B * G, K]`` of turn rewards ``[B * G, K]``
    (row ``b * G + g``): turn ``k``'s reward relative to the rewards of turn ``k`` of the
    group members that played it (``played`` ``[B * G, K]``). A turn fewer than two
    members played has no group to compare with: it takes ``fallback`` ``[B * G]`` (the
    episode's trajectory advantage) when given, else 0. Turns not played are 0."""
    rows, turns = turn_rewards.shape
    shape = (rows // group_size, group_size, turns)
    present = played.reshape(shape).float()
    adv = PRESENT_NORMS[adv_norm](turn_rewards.float().reshape(shape), present).reshape(rows, turns)
    compared = (present.sum(1, keepdim=True) >= 2).expand(shape).reshape(rows, turns)
    other = torch.zeros_like(adv) if fallback is None else fallback[:, None].expand_as(adv)
    return torch.where(compared, adv, other.float()) * played


def whiten_and_clip(
    adv: torch.Tensor, units: torch.Tensor, *, whiten: bool, clip_range: float | None
) -> torch.Tensor:
    """Advantages standardised over the batch's ``units`` (a mask of ``adv``'s shape;
    sample std) when ``whiten``, then clipped to ``[-clip_range, clip_range]``."""
    if whiten and units.sum() > 1:
        values = adv[units.bool()]
        adv = torch.where(units.bool(), (adv - values.mean()) / (values.std() + EPS), adv)
    if clip_range is not None:
        adv = adv.clamp(-clip_range, clip_range)
    return adv


# -- LLM-REINFORCE ---------------------------------------------------------------------------
def shaped_rewards(
    rewards: torch.Tensor,
    old_logprobs: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    mask: torch.Tensor,
    beta: float,
) -> torch.Tensor:
    """Per-token rewards ``[rows, T - 1]``: each completion's reward ``[rows]`` on every
    one of its tokens (or each token's own ``[rows, T - 1]``: a multi-turn episode's turn
    reward on every token of its turn), minus ``beta`` times the k1 KL ``log pi_old - log
    pi_ref`` (the KL enters REINFORCE only here); zero outside ``mask``."""
    shaped = per_token(rewards).expand_as(old_logprobs).float()
    if ref_logprobs is not None:
        shaped = shaped - beta * (old_logprobs - ref_logprobs)
    return shaped * mask


def _token_returns(
    shaped: torch.Tensor, mask: torch.Tensor, gamma: float, turns: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``G_t = r_t + gamma G_{t'}`` over each row's action tokens, ``t'`` the next action
    token (the tokens between turns, the environment's, are skipped); one unit per
    token."""
    returns = torch.zeros_like(shaped)
    following = torch.zeros_like(shaped[:, 0])
    for t in range(shaped.shape[1] - 1, -1, -1):
        acting = mask[:, t].bool()
        following = torch.where(acting, shaped[:, t] + gamma * following, following)
        returns[:, t] = following
    return returns * mask, mask


def _turn_returns(
    shaped: torch.Tensor, mask: torch.Tensor, gamma: float, turns: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each turn's reward: the mean of its shaped token rewards ``r_k``; its return ``G_k =
    r_k + gamma G_{k+1}`` over the turns the episode played (0 after its last), on every
    token of the turn; one unit per turn, on its first token."""
    turn_ids = single_turn(mask) if turns is None else turns
    sums, counts = per_turn_sum(shaped * mask, turn_ids)
    reward = sums / counts.clamp(min=1)
    returns = torch.zeros_like(reward)
    following = torch.zeros_like(reward[:, 0])
    for k in range(reward.shape[1] - 1, -1, -1):
        following = (reward[:, k] + gamma * following) * (counts[:, k] > 0)
        returns[:, k] = following
    first = turn_onehot(turn_ids, reward.shape[1]).cumsum(1) == 1  # a turn's first token
    units = (first & (turn_onehot(turn_ids, reward.shape[1]) > 0)).any(-1) & mask.bool()
    return on_turn_tokens(returns, turn_ids) * mask, units.float()


#: ``advantage_granularity`` -> (returns ``[rows, T - 1]`` of shaped rewards, mask, gamma,
#: turn ids (None: single-turn); the mask of the returns' units). ``"token"``: each
#: token's discounted return over the action tokens, one unit per token; ``"turn"``: each
#: turn's return over the turns (a single-turn completion: the mean of its shaped
#: rewards), one unit per turn (on its first token; broadcast by :func:`rebn`).
RETURNS = {"token": _token_returns, "turn": _turn_returns}


def return_moments(returns: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
    """``[count, sum, sum of squares]`` of the returns at their units (summed over the
    processes of a data-parallel run before :func:`rebn` normalises)."""
    values = returns * units
    return torch.stack([units.sum(), values.sum(), (values * values).sum()]).double()


def rebn(returns: torch.Tensor, mask: torch.Tensor, moments: torch.Tensor) -> torch.Tensor:
    """Return batch normalisation (GEM): ``(G - mean) / (std + 1e-8)`` over the batch's
    units (``moments`` from :func:`return_moments`; sample std), zero where ``mask`` is
    not; all zero with one unit or none."""
    count, total, squares = (float(v) for v in moments)
    if count <= 1:
        return torch.zeros_like(returns)
    mean = total / count
    std = math.sqrt(max(squares - count * mean * mean, 0.0) / (count - 1))
    return (returns - mean) / (std + EPS) * mask


def _one_per_completion(mask: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
    return mask / mask.sum(1, keepdim=True).clamp(min=1)


def _completion_mean(values: torch.Tensor, mask: torch.Tensor, turns: torch.Tensor):
    return masked_mean(values, mask)[:, None].expand_as(values)


def _one_per_turn(mask: torch.Tensor, turns: torch.Tensor) -> torch.Tensor:
    counts = per_turn_sum(mask, turns)[1]  # each turn's tokens
    return on_turn_tokens(1 / counts.clamp(min=1), turns) * mask


def _turn_mean_of(values: torch.Tensor, mask: torch.Tensor, turns: torch.Tensor):
    return _turn_mean(values * mask, turns)


#: Importance-ratio level -> (each token's share of a unit ``[rows, T - 1]`` from the
#: mask and the turn ids; the advantage of each token's unit). A token is a unit of its
#: own, or a completion (episode) is one, or each turn is one: its tokens share it
#: equally and its advantage is their mean.
UNITS = {
    "token": (lambda mask, turns: mask, lambda adv, mask, turns: adv),
    "sequence": (_one_per_completion, _completion_mean),
    "product": (_one_per_completion, _completion_mean),
    "turn": (_one_per_turn, _turn_mean_of),
    "turn_product": (_one_per_turn, _turn_mean_of),
}


def reinforce_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_coef: float,
    level: str = "token",
    turn_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LLM-REINFORCE's clipped surrogate ``max(-A r, -A clip(r, 1 - e, 1 + e))`` per unit
    of the importance ratio: each token (``level`` ``"token"``), or each completion with
    its tokens' log-ratios pooled (``"sequence"``: mean, ``"product"``: sum), or each turn
    of a multi-turn episode likewise (``"turn"``, ``"turn_product"``; ``turn_ids``: the
    predictions' turns, None: single-turn), its token advantages ``[rows, T - 1]``
    averaged. Returns per row: the sum of its units' terms, how many units it holds, how
    many of them were clipped."""
    turns = single_turn(mask) if turn_ids is None else turn_ids
    ratio = importance_ratio(logprobs, old_logprobs, mask, level, turns)
    share, pool = UNITS[level]
    weights, adv = share(mask, turns), pool(advantages, mask, turns)
    low, high = clip_bounds(clip_coef)
    term = torch.maximum(-adv * ratio, -adv * ratio.clamp(low, high))
    clipped = ((ratio < low) | (ratio > high)).float()
    return (term * weights).sum(1), weights.sum(1), (clipped * weights).sum(1)


# -- LLM-PPO -------------------------------------------------------------------------------
def token_gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over each row's action tokens ``[rows, T - 1]``:
    ``delta_t = r_t + gamma V_{t+1} m_{t+1} - V_t``, ``A_t = delta_t + gamma lam m_{t+1}
    A_{t+1}`` (``m`` the mask; nothing follows the last column). Returns the advantages
    and the returns ``A + V``, zero outside ``mask``."""
    adv = torch.zeros_like(values)
    following_adv = torch.zeros_like(values[:, 0])
    following_value = torch.zeros_like(values[:, 0])
    following_mask = torch.zeros_like(values[:, 0])
    for t in range(values.shape[1] - 1, -1, -1):
        delta = rewards[:, t] + gamma * following_value * following_mask - values[:, t]
        following_adv = delta + gamma * lam * following_mask * following_adv
        adv[:, t] = following_adv
        following_value, following_mask = values[:, t], mask[:, t]
    return adv * mask, (adv + values) * mask


def turn_values(
    values: torch.Tensor, turn_ids: torch.Tensor, max_turns: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each turn's value ``[rows, max_turns]``: the value ``values`` ``[rows, T - 1]`` of
    the turn's last action token; and which turns the row played (a turn without a token
    has value 0)."""
    positions = torch.arange(values.shape[1], device=values.device).expand_as(turn_ids)
    turns = torch.arange(max_turns, device=values.device)
    # [rows, max_turns, T - 1]: the position of each token of turn k, else -1.
    at = torch.where(turn_ids[:, None, :] == turns[None, :, None], positions[:, None, :], -1)
    last = at.max(-1).values
    played = last >= 0
    return values.gather(1, last.clamp(min=0)) * played, played.float()


def turn_gae(
    rewards: torch.Tensor, values: torch.Tensor, played: torch.Tensor, gamma: float, lam: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation across turns ``[rows, max_turns]`` (a turn is one
    action): ``delta_k = r_k + gamma V_{k+1} - V_k`` with ``V_{k+1}`` 0 after the row's
    last played turn, ``A_k = delta_k + gamma lam A_{k+1}``. Returns the advantages and
    the returns ``A + V``, zero on turns not played."""
    return token_gae(rewards.float() * played, values, played, gamma, lam)


#: Advantage granularity -> the value of each unit from the per-token values, the turn
#: ids and the number of turns: a token's own, or a turn's (its last token's).
VALUE_UNITS = {
    "token": lambda values, turn_ids, max_turns: values,
    "turn": lambda values, turn_ids, max_turns: turn_values(values, turn_ids, max_turns)[0],
}

#: Advantage granularity -> (the rewards of its units, the mask of its units) from the
#: turns' rewards ``[rows, max_turns]``, the turn ids, the action mask and the played
#: turns: each action token with its turn's reward, or each played turn.
STEP_REWARDS = {
    "token": lambda rewards, turn_ids, mask, played: (
        on_turn_tokens(rewards.float(), turn_ids),
        mask,
    ),
    "turn": lambda rewards, turn_ids, mask, played: (rewards.float() * played, played),
}

#: Advantage granularity -> its units' values broadcast to the action tokens.
TO_TOKENS = {"token": lambda values, turn_ids: values, "turn": on_turn_tokens}


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    units: torch.Tensor,
    *,
    clip_coef: float,
    vf_coef: float,
) -> torch.Tensor:
    """PPO's clipped value loss per row ``[rows]``: the sum over the row's ``units`` (a
    mask over tokens or turns) of ``vf_coef * 0.5 * max((G - V)^2, (G - V_old - clip(V -
    V_old, -e, e))^2)``; divided by the number of units it is the mean."""
    clipped = old_values + (values - old_values).clamp(-clip_coef, clip_coef)
    worst = torch.maximum((returns - values) ** 2, (returns - clipped) ** 2)
    return vf_coef * 0.5 * (worst * units).sum(1)


def per_turn_rows(values: torch.Tensor, turn_ids: torch.Tensor, max_turns: int) -> torch.Tensor:
    """``values`` ``[rows, T - 1]`` as ``[rows * max_turns, T - 1]``: row ``b * max_turns
    + k`` holds row ``b`` where its tokens are turn ``k``'s, zero elsewhere (so a
    per-row pooling pools per turn)."""
    turns = torch.arange(max_turns, device=values.device)
    inside = (turn_ids[:, None, :] == turns[None, :, None]).to(values.dtype)
    return (values[:, None, :] * inside).reshape(-1, values.shape[1])


def ppo_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    turn_ids: torch.Tensor,
    max_turns: int,
    *,
    clip_coef: float,
    level: str,
    pooling: str = "sum",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """LLM-PPO's clipped surrogate :func:`reinforce_loss` at the importance-sampling unit
    ``level``: ``"token"``; ``"turn"``, each turn's tokens' log-ratios pooled
    (``pooling``: ``"sum"``, the product of the ratios, or ``"mean"``, their geometric
    mean) with its tokens' advantages averaged; ``"trajectory"``, the whole completion's
    (geometric mean). Returns per row: its units' summed terms, how many units it has,
    how many were clipped."""
    if level != "turn":
        pooled = {"token": "token", "trajectory": "sequence"}[level]
        return reinforce_loss(
            logprobs, old_logprobs, advantages, mask, clip_coef=clip_coef, level=pooled
        )
    turn_logprobs, turn_old, turn_advantages = (
        per_turn_rows(v, turn_ids, max_turns) for v in (logprobs, old_logprobs, advantages)
    )
    turn_mask = per_turn_rows(mask, turn_ids, max_turns)
    pooled = {"sum": "product", "mean": "sequence"}[pooling]
    parts = reinforce_loss(
        turn_logprobs, turn_old, turn_advantages, turn_mask, clip_coef=clip_coef, level=pooled
    )
    rows = logprobs.shape[0]
    terms, units, clipped = (part.reshape(rows, max_turns).sum(1) for part in parts)
    return terms, units, clipped


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
