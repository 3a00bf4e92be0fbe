"""The LLM losses against hand computations on fixed tensors (agilerl.algorithms.llm_losses)."""

from __future__ import annotations

import math

import pytest
import torch

from agilerl.algorithms import llm_losses as L

REWARDS = torch.tensor([[1.0, 0.0, 0.5, 0.5], [2.0, 2.0, 2.0, 2.0]])


def close(got: torch.Tensor, expected: list) -> None:
    torch.testing.assert_close(got, torch.tensor(expected, dtype=got.dtype), rtol=1e-5, atol=1e-6)


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
    with pytest.raises(ValueError, match="one of 'token', 'sequence', 'product'"):
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


# -- GSPO, CISPO ------------------------------------------------------------------------
def test_gspo_clips_the_sequence_ratio_and_every_token_carries_it():
    # Row 0: token ratios 2 and 2 -> s = 2, clipped to 1.2 with A = 1: -min(2, 1.2) = -1.2.
    # Row 1: token ratios 2 and 0.5 -> s = 1 (geometric mean), unclipped: -1 * A = 0.5.
    old = torch.log(torch.tensor([[0.25, 0.25, 0.3], [0.25, 0.4, 0.3]]))
    logp = torch.log(torch.tensor([[0.5, 0.5, 0.9], [0.5, 0.2, 0.9]])).requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]])
    adv = torch.tensor([1.0, -0.5])
    loss, kl, clipped = L.gspo_token_loss(logp, old, None, adv, mask, clip_coef=0.2, beta=0.1)
    close(loss, [[-1.2, -1.2, 0.0], [0.5, 0.5, 0.0]])
    assert clipped.tolist() == [[True, True, False], [False, False, False]]
    assert kl.abs().sum() == 0  # no reference: no KL term
    # The gradient (row 1, unclipped): d(-s A)/d logp_t = -A s / |T| = 0.25 on each token.
    loss[1].sum().backward()
    assert logp.grad[1].tolist() == pytest.approx([0.25 * 2, 0.25 * 2, 0.0])  # two tokens' terms
    with pytest.raises(ValueError, match="GSPO's ratio is per sequence"):
        L.gspo_token_loss(logp, old, None, adv, mask, clip_coef=0.2, beta=0.0, level="token")


def test_cispo_weighs_log_probabilities_by_the_clipped_detached_ratio():
    old = torch.log(torch.tensor([[0.25, 0.4, 0.5]]))
    logp = torch.log(torch.tensor([[0.75, 0.2, 0.5]])).requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, _, clipped = L.cispo_token_loss(
        logp, old, None, torch.tensor([2.0]), mask, clip_coef=[0.8, 2.0], beta=0.0
    )
    # ratios 3 and 0.5, clipped to 2 and 0.8: -w A log p
    expected = [-2.0 * 2.0 * math.log(0.75), -0.8 * 2.0 * math.log(0.2), 0.0]
    assert loss[0].tolist() == pytest.approx(expected, rel=1e-5)
    assert clipped[0].tolist() == [True, True, False]
    loss.sum().backward()
    # Clipped tokens keep their gradient, -w A (PPO's clip would make it zero).
    assert logp.grad[0].tolist() == pytest.approx([-4.0, -1.6, 0.0])
    # A scalar clip_coef e is the bounds [1 - e, 1 + e]; a pair needs low <= high.
    assert L.clip_bounds(0.2) == pytest.approx((0.8, 1.2))
    with pytest.raises(ValueError, match="clip_coef: the bounds"):
        L.clip_bounds([2.0, 0.8])


def test_cispo_adds_beta_times_k3():
    logp = torch.log(torch.tensor([[0.5]]))
    ref = torch.log(torch.tensor([[0.25]]))
    loss, kl, _ = L.cispo_token_loss(
        logp, logp, ref, torch.tensor([1.0]), torch.ones(1, 1), clip_coef=0.2, beta=0.1
    )
    k3 = 0.5 + math.log(2) - 1
    assert loss.item() == pytest.approx(-math.log(0.5) + 0.1 * k3)
    assert kl.item() == pytest.approx(k3)


def test_the_group_losses_table_names_each_algorithms_loss():
    assert L.GROUP_LOSSES == {
        "grpo": L.grpo_token_loss, "gspo": L.gspo_token_loss, "cispo": L.cispo_token_loss
    }  # fmt: skip


# -- LLM-REINFORCE ---------------------------------------------------------------------------
def test_shaped_rewards_subtract_beta_times_k1_on_every_completion_token():
    old = torch.log(torch.tensor([[0.5, 0.5, 0.5]]))
    ref = torch.log(torch.tensor([[0.25, 0.5, 0.5]]))
    mask = torch.tensor([[0.0, 1.0, 1.0]])  # a prompt prediction, then two completion tokens
    shaped = L.shaped_rewards(torch.tensor([1.0]), old, ref, mask, beta=0.5)
    assert shaped[0].tolist() == pytest.approx([0.0, 1.0, 1.0])
    mask = torch.ones(1, 3)
    shaped = L.shaped_rewards(torch.tensor([1.0]), old, ref, mask, beta=0.5)
    assert shaped[0].tolist() == pytest.approx([1.0 - 0.5 * math.log(2), 1.0, 1.0])


def test_token_returns_discount_the_following_tokens_and_turn_returns_average():
    shaped = torch.tensor([[0.0, 1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    returns, units = L.RETURNS["token"](shaped, mask, 0.5)
    # row 0: G_2 = 2, G_1 = 1 + 0.5 * 2 = 2 ; row 1: 1.875, 1.75, 1.5, 1
    close(returns, [[0.0, 2.0, 2.0, 0.0], [1.875, 1.75, 1.5, 1.0]])
    assert torch.equal(units, mask)
    returns, units = L.RETURNS["turn"](shaped, mask, 0.5)
    close(returns, [[0.0, 1.5, 1.5, 0.0], [1.0] * 4])
    assert units.tolist() == [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]  # one per completion


def test_rebn_z_scores_the_returns_over_the_batchs_units():
    returns = torch.tensor([[0.0, 1.5, 1.5], [3.0, 3.0, 0.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    units = torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    moments = L.return_moments(returns, units)
    assert moments.tolist() == pytest.approx([2.0, 4.5, 1.5**2 + 9.0])
    adv = L.rebn(returns, mask, moments)
    std = math.sqrt(((1.5 - 2.25) ** 2 + (3 - 2.25) ** 2) / 1)  # sample std of 1.5, 3
    close(adv, [[0.0, -0.75 / std, -0.75 / std], [0.75 / std, 0.75 / std, 0.0]])
    one = L.return_moments(returns[:1], units[:1])
    assert L.rebn(returns[:1], mask[:1], one).abs().sum() == 0  # one unit: no spread


def test_reinforce_loss_per_token_and_per_completion():
    old = torch.log(torch.tensor([[0.25, 0.4, 0.5]]))
    logp = torch.log(torch.tensor([[0.5, 0.2, 0.5]]))
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    adv = torch.tensor([[1.0, 3.0, 0.0]])
    total, units, clipped = L.reinforce_loss(logp, old, adv, mask, clip_coef=0.2)
    # ratios 2 and 0.5 (both clipped): max(-1*2, -1*1.2) = -1.2 ; max(-3*0.5, -3*0.8) = -1.5
    assert (total.item(), units.item(), clipped.item()) == pytest.approx((-2.7, 2.0, 2.0))
    # turn with sum pooling: ratio 2 * 0.5 = 1, advantage mean 2: -2 for the one unit
    total, units, clipped = L.reinforce_loss(logp, old, adv, mask, clip_coef=0.2, level="product")
    assert (total.item(), units.item(), clipped.item()) == pytest.approx((-2.0, 1.0, 0.0))
    # trajectory (mean pooling): ratio sqrt(2 * 0.5) = 1 as well
    total, units, _ = L.reinforce_loss(logp, old, adv, mask, clip_coef=0.2, level="sequence")
    assert (total.item(), units.item()) == pytest.approx((-2.0, 1.0))
    # product pooling of ratios 2 and 2 is 4, clipped: max(-2*4, -2*1.2) = -2.4
    total, _, clipped = L.reinforce_loss(
        logp, torch.log(torch.tensor([[0.25, 0.1, 0.5]])), adv, mask, clip_coef=0.2,
        level="product",
    )  # fmt: skip
    assert (total.item(), clipped.item()) == pytest.approx((-2.4, 1.0))


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


# -- LLM-PPO -------------------------------------------------------------------------------
def test_token_gae_by_hand():
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0]])  # a prompt prediction, then three actions
    rewards = L.on_turn_tokens(torch.tensor([[1.0]]), torch.tensor([[-1, 0, 0, 0]]))
    close(rewards, [[0.0, 1.0, 1.0, 1.0]])  # the turn's whole reward on each of its tokens
    values = torch.tensor([[9.0, 0.5, 0.2, 0.1]])
    adv, returns = L.token_gae(rewards, values, mask, gamma=0.9, lam=0.5)
    # t=3: 1 - 0.1 = 0.9; t=2: 1 + 0.9*0.1 - 0.2 = 0.89, + 0.45*0.9 = 1.295;
    # t=1: 1 + 0.9*0.2 - 0.5 = 0.68, + 0.45*1.295 = 1.26275; the prompt column is 0.
    close(adv, [[0.0, 1.26275, 1.295, 0.9]])
    close(returns, [[0.0, 1.76275, 1.495, 1.0]])


def test_turn_values_gae_and_broadcast_by_hand():
    turn_ids = torch.tensor([[-1, 0, 0, -1, 1, 1, -1]])  # turn 0, feedback, turn 1, padding
    values = torch.tensor([[9.0, 0.5, 0.6, 9.0, 0.7, 0.8, 9.0]])
    turn_v, played = L.turn_values(values, turn_ids, 3)
    close(turn_v, [[0.6, 0.8, 0.0]])  # each turn's last action token; turn 2 not played
    close(played, [[1.0, 1.0, 0.0]])
    close(L.on_turn_tokens(torch.tensor([[1.0, 2.0, 0.0]]), turn_ids), [[0, 1, 1, 0, 2, 2, 0]])
    adv, returns = L.turn_gae(
        torch.tensor([[1.0, 2.0, 5.0]]), torch.tensor([[0.5, 1.0, 0.0]]), played, 0.9, 0.5
    )
    # k=1 (last played): 2 - 1 = 1; k=0: 1 + 0.9*1 - 0.5 = 1.4, + 0.45*1 = 1.85;
    # the reward of the unplayed turn 2 counts for nothing.
    close(adv, [[1.85, 1.0, 0.0]])
    close(returns, [[2.35, 2.0, 0.0]])
    close(L.on_turn_tokens(adv, turn_ids), [[0.0, 1.85, 1.85, 0.0, 1.0, 1.0, 0.0]])


def test_clipped_value_loss_by_hand():
    values, old = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.5, 0.5]])
    returns, units = torch.tensor([[2.0, 0.45]]), torch.tensor([[1.0, 1.0]])
    got = L.clipped_value_loss(values, old, returns, units, clip_coef=0.2, vf_coef=0.5)
    # unit 0: max((2-1)^2, (2-0.7)^2) = 1.69; unit 1: max(0.45^2, (0.45-0.3)^2) = 0.2025
    close(got, [0.5 * 0.5 * (1.69 + 0.2025)])
    masked = L.clipped_value_loss(values, old, returns, torch.tensor([[1.0, 0.0]]),
                                  clip_coef=0.2, vf_coef=0.5)  # fmt: skip
    close(masked, [0.25 * 1.69])


def test_ppo_policy_loss_pools_the_ratio_per_turn():
    turn_ids = torch.tensor([[0, 0, 1, 1]])
    mask = torch.ones(1, 4)
    old = torch.log(torch.tensor([[0.25, 0.4, 0.25, 0.1]]))
    logp = torch.log(torch.tensor([[0.5, 0.2, 0.5, 0.2]]))  # ratios 2, 0.5 | 2, 2
    adv = torch.tensor([[1.0, 3.0, 2.0, 2.0]])
    kw = {"clip_coef": 0.2}
    # turn 0: product 1, advantage mean 2 -> -2; turn 1: product 4, clipped -> -2 * 1.2
    total, units, clipped = L.ppo_policy_loss(logp, old, adv, mask, turn_ids, 2, level="turn", **kw)
    assert (total.item(), units.item(), clipped.item()) == pytest.approx((-4.4, 2.0, 1.0))
    # mean pooling: geometric means 1 and 2 (clipped): the same terms here
    total, _, _ = L.ppo_policy_loss(logp, old, adv, mask, turn_ids, 2, level="turn",
                                    pooling="mean", **kw)  # fmt: skip
    assert total.item() == pytest.approx(-4.4)
    # token: max(-2, -1.2) + max(-1.5, -2.4) + 2 * max(-4, -2.4) = -1.2 - 1.5 - 4.8
    total, units, _ = L.ppo_policy_loss(logp, old, adv, mask, turn_ids, 2, level="token", **kw)
    assert (total.item(), units.item()) == pytest.approx((-7.5, 4.0))
    # trajectory: geometric mean of the four ratios 2^(1/2), advantage mean 2 -> clipped
    total, units, _ = L.ppo_policy_loss(logp, old, adv, mask, turn_ids, 2, level="trajectory",
                                        **kw)  # fmt: skip
    assert (total.item(), units.item()) == pytest.approx((-2.4, 1.0))


# -- multi-turn episodes -------------------------------------------------------------------
#: Two groups of two episodes; turn ids of 6 predictions (-1: prompt, environment, padding).
TURNS = torch.tensor([
    [-1, 0, 0, -1, 1, 1],   # group 0, member 0: two turns
    [-1, 0, -1, -1, -1, -1],  # group 0, member 1: one turn
    [-1, 0, -1, 1, -1, -1],  # group 1, member 0: two turns
    [-1, 0, 0, -1, 1, -1],  # group 1, member 1: two turns
])  # fmt: skip
TURN_REWARDS = torch.tensor([[0.0, 1.0], [0.5, 0.0], [0.0, 1.0], [1.0, 3.0]])


def test_turns_played_and_per_turn_sums_follow_the_turn_ids():
    played = L.turns_played(TURNS, 2)
    assert played.tolist() == [[True, True], [True, False], [True, True], [True, True]]
    sums, counts = L.per_turn_sum(torch.ones(4, 6), TURNS, 2)
    assert counts.tolist() == [[2, 2], [1, 0], [1, 1], [2, 1]]
    tokens = L.on_turn_tokens(torch.tensor([[10.0, 20.0]] * 4), TURNS)
    assert tokens[0].tolist() == [0, 10, 10, 0, 20, 20] and tokens[1].tolist() == [
        0,
        10,
        0,
        0,
        0,
        0,
    ]


def test_turn_advantages_compare_each_turn_with_the_group_members_that_played_it():
    played = L.turns_played(TURNS, 2)
    fallback = torch.tensor([7.0, 8.0, 9.0, 10.0])
    adv = L.turn_group_advantages(TURN_REWARDS, played, 2, "mean", fallback=fallback)
    # turn 0: group 0 rewards 0, 0.5 (mean 0.25); group 1: 0, 1 (mean 0.5). Turn 1: group
    # 0 has one player (member 0): the fallback, 7; member 1 did not play it: 0. Group 1:
    # 1, 3 (mean 2).
    close(adv, [[-0.25, 7.0], [0.25, 0.0], [-0.5, -1.0], [0.5, 1.0]])
    without = L.turn_group_advantages(TURN_REWARDS, played, 2, "mean")
    close(without, [[-0.25, 0.0], [0.25, 0.0], [-0.5, -1.0], [0.5, 1.0]])
    std = L.turn_group_advantages(TURN_REWARDS, played, 2, "mean_std")
    s = math.sqrt(0.125)  # sample std of (0, 0.5); (0, 1) has sqrt(0.5), (1, 3) sqrt(2)
    close(std, [[-0.25 / s, 0.0], [0.25 / s, 0.0],
                [-0.5 / math.sqrt(0.5), -1 / math.sqrt(2)], [0.5 / math.sqrt(0.5), 1 / math.sqrt(2)]])  # fmt: skip


def test_whitening_counts_the_played_turns_only():
    adv = torch.tensor([[1.0, 5.0], [3.0, 0.0]])
    units = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    got = L.whiten_and_clip(adv, units, whiten=True, clip_range=None)
    s = math.sqrt(2.0)  # sample std of 1, 3
    close(got, [[-1 / s, 5.0], [1 / s, 0.0]])
    assert L.whiten_and_clip(adv, units, whiten=False, clip_range=2.0).max() == 2.0


def test_the_turn_level_ratio_is_the_geometric_mean_over_each_turns_tokens():
    logp = torch.tensor([[0.0, 0.2, 0.4, 9.0, 0.6, 0.0]])
    old = torch.zeros(1, 6)
    turns = torch.tensor([[-1, 0, 0, -1, 1, -1]])
    mask = (turns >= 0).float()
    ratio = L.importance_ratio(logp, old, mask, "turn", turns)
    close(ratio * mask, [[0.0, math.exp(0.3), math.exp(0.3), 0.0, math.exp(0.6), 0.0]])
    # single-turn (no turn ids): one turn, the sequence's ratio
    seq = L.importance_ratio(logp, old, mask, "sequence")
    close(L.importance_ratio(logp, old, mask, "turn") * mask, (seq * mask).tolist())


def test_multi_turn_returns_discount_over_turns_and_skip_the_environments_tokens():
    turns = torch.tensor([[0, 0, -1, 1, 1, -1]])
    mask = (turns >= 0).float()
    shaped = torch.tensor([[1.0, 3.0, 0.0, 4.0, 4.0, 0.0]])
    # turn rewards (means): 2 and 4; gamma 0.5: G_1 = 4, G_0 = 2 + 0.5 * 4 = 4
    returns, units = L.RETURNS["turn"](shaped, mask, 0.5, turns)
    close(returns, [[4.0, 4.0, 0.0, 4.0, 4.0, 0.0]])
    assert units.tolist() == [[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]]  # each turn's first token
    returns, _ = L.RETURNS["turn"](shaped, mask, 0.0, turns)
    close(returns, [[2.0, 2.0, 0.0, 4.0, 4.0, 0.0]])  # gamma 0: each turn's own reward
    # tokens: 4 -> 4 + 0.5*0 ; 4 + 0.5*4 = 6 ; (env token skipped) 3 + 0.5*6 = 6 ; 1 + 3 = 4
    returns, units = L.RETURNS["token"](shaped, mask, 0.5, turns)
    close(returns, [[4.0, 6.0, 0.0, 6.0, 4.0, 0.0]])
    assert torch.equal(units, mask)


def test_reinforce_loss_per_turn_pools_each_turns_tokens():
    logp = torch.tensor([[0.0, 0.2, 0.4, 9.0, 0.6, 0.0]])
    old = torch.zeros(1, 6)
    turns = torch.tensor([[-1, 0, 0, -1, 1, -1]])
    mask = (turns >= 0).float()
    adv = torch.tensor([[0.0, 1.0, 3.0, 0.0, -1.0, 0.0]])
    # turn 0: ratio exp(0.3) (mean) or exp(0.6) (sum), advantage 2; turn 1: exp(0.6), -1.
    # clip 0.5: [0.5, 1.5]; A > 0 at exp(0.3) = 1.35 is not clipped: -2 * 1.35; A < 0 at
    # exp(0.6) = 1.82: max(1.82, 1.5) = 1.82 (the pessimistic term keeps the larger).
    total, units, clipped = L.reinforce_loss(
        logp, old, adv, mask, clip_coef=0.5, level="turn", turn_ids=turns
    )
    assert units.tolist() == pytest.approx([2.0])  # two turns
    assert total.tolist() == pytest.approx([-2 * math.exp(0.3) + math.exp(0.6)])
    assert clipped.tolist() == pytest.approx([1.0])  # turn 1's ratio left the range
    total, _, _ = L.reinforce_loss(
        logp, old, adv, mask, clip_coef=0.5, level="turn_product", turn_ids=turns
    )
    # turn 0: exp(0.6) clipped to 1.5 for A = 2: max(-3.64, -3) = -3; turn 1: 1.82
    assert total.tolist() == pytest.approx([-3.0 + math.exp(0.6)])
    # single-turn (no turn ids): the turn is the completion, as "sequence" / "product"
    for turn_level, level in (("turn", "sequence"), ("turn_product", "product")):
        one = L.reinforce_loss(logp, old, adv, mask, clip_coef=0.5, level=turn_level)
        other = L.reinforce_loss(logp, old, adv, mask, clip_coef=0.5, level=level)
        for a, b in zip(one, other, strict=True):
            torch.testing.assert_close(a, b)
