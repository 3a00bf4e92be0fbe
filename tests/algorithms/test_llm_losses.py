"""The LLM losses against hand computations on fixed tensors (agilerl.algorithms.llm_losses)."""

from __future__ import annotations

import math

import pytest
import torch

from agilerl.algorithms import llm_losses as L

REWARDS = torch.tensor([[1.0, 0.0, 0.5, 0.5], [2.0, 2.0, 2.0, 2.0]])


def test_token_logprobs_are_the_log_softmax_of_the_next_token():
    logits = torch.tensor([[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [5.0, 1.0, 1.0]]])
    ids = torch.tensor([[0, 2, 1]])
    got = L.token_logprobs(logits, ids)
    # prediction 0 (logits row 0) scores token 2, prediction 1 (row 1) scores token 1
    expected = [3.0 - math.log(math.e + math.e**2 + math.e**3), -math.log(3.0)]
    assert got.shape == (1, 2)
    assert got[0].tolist() == pytest.approx(expected, abs=1e-6)


def test_mean_std_advantages_divide_by_the_groups_sample_std():
    adv = L.group_advantages(REWARDS, "mean_std").reshape(2, 4)
    std = math.sqrt((0.5**2 + 0.5**2 + 0 + 0) / 3)  # Bessel-corrected
    assert adv[0].tolist() == pytest.approx([0.5 / std, -0.5 / std, 0.0, 0.0], rel=1e-5)
    assert adv[1].tolist() == [0.0, 0.0, 0.0, 0.0]  # a group that scored alike


def test_mean_advantages_subtract_the_group_mean_and_none_keeps_rewards():
    assert L.group_advantages(REWARDS, "mean").tolist() == [0.5, -0.5, 0, 0, 0, 0, 0, 0]
    assert L.group_advantages(REWARDS, "none").tolist() == REWARDS.reshape(-1).tolist()


def test_whitened_advantages_are_standardised_over_the_batch_then_clipped():
    raw = L.group_advantages(REWARDS, "none", whiten=True)
    flat = REWARDS.reshape(-1)
    assert raw.tolist() == pytest.approx(((flat - flat.mean()) / flat.std()).tolist(), rel=1e-5)
    clipped = L.group_advantages(REWARDS, "none", whiten=True, clip_range=0.5)
    assert clipped.max() == pytest.approx(0.5) and clipped.min() == pytest.approx(-0.5)


def test_a_group_of_one_has_zero_advantage():
    assert L.group_advantages(torch.tensor([[3.0], [1.0]]), "mean_std").tolist() == [0.0, 0.0]


def test_importance_ratio_per_token_and_per_sequence():
    logp = torch.log(torch.tensor([[0.5, 0.2, 0.9]]))
    old = torch.log(torch.tensor([[0.25, 0.4, 0.1]]))
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    token = L.importance_ratio(logp, old, mask, "token")
    assert token[0, :2].tolist() == pytest.approx([2.0, 0.5])
    seq = L.importance_ratio(logp, old, mask, "sequence")
    # geometric mean of the masked tokens' ratios: sqrt(2 * 0.5) = 1, on every token
    assert seq[0].tolist() == pytest.approx([1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="'token' or 'sequence'"):
        L.importance_ratio(logp, old, mask, "word")


def test_clipped_surrogate_takes_the_pessimistic_term():
    ratio = torch.tensor([[1.5, 0.5], [1.5, 0.5]])
    adv = torch.tensor([2.0, -1.0])
    loss = L.clipped_surrogate(ratio, adv, 0.2)
    # A > 0: min(1.5*2, 1.2*2) = 2.4 ; min(0.5*2, 0.8*2) = 1.0
    # A < 0: min(-1.5, -1.2) = -1.5 ; min(-0.5, -0.8) = -0.8
    assert loss.reshape(-1).tolist() == pytest.approx([-2.4, -1.0, 1.5, 0.8])


def test_k3_kl_hand_values():
    logp = torch.log(torch.tensor([0.5, 0.25]))
    ref = torch.log(torch.tensor([0.25, 0.25]))
    kl = L.k3_kl(logp, ref)
    # d = log(0.25/0.5): exp(d) - d - 1 = 0.5 + log 2 - 1 ; equal policies: 0
    assert kl.tolist() == pytest.approx([0.5 + math.log(2) - 1, 0.0])


def test_grpo_token_loss_adds_beta_kl_and_masks():
    logp = torch.log(torch.tensor([[0.5, 0.5]]))
    old = logp.clone()
    ref = torch.log(torch.tensor([[0.25, 0.5]]))
    mask = torch.tensor([[1.0, 0.0]])
    loss, kl, clipped = L.grpo_token_loss(
        logp, old, ref, torch.tensor([1.0]), mask, clip_coef=0.2, beta=0.1
    )
    k3 = 0.5 + math.log(2) - 1
    assert loss[0].tolist() == pytest.approx([-1.0 + 0.1 * k3, 0.0])
    assert kl[0].tolist() == pytest.approx([k3, 0.0])
    assert not clipped.any()


def test_dpo_loss_hand_value():
    r_c, r_r = L.dpo_margins(
        torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-2.0]), 0.5
    )
    assert (r_c.item(), r_r.item()) == pytest.approx((0.5, -0.5))
    assert L.dpo_loss(r_c, r_r).item() == pytest.approx(-math.log(1 / (1 + math.exp(-1.0))))


def test_masked_nll_counts_only_response_tokens():
    logp = torch.log(torch.tensor([[0.1, 0.5, 0.25, 0.9]]))
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0]])  # prompt, response, response, padding
    total, count = L.masked_nll(logp, mask)
    assert count.item() == 2
    assert total.item() == pytest.approx(math.log(2) + math.log(4))
