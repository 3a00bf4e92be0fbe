"""The action-distribution factory: one family per action-space type, from a table, with
masks for categorical actions and a clear error for any other space."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch.distributions import Bernoulli, Categorical, Normal

from agilerl.algorithms import PPO
from agilerl.models import StochasticActorSpec
from agilerl.networks import StochasticActor
from agilerl.networks.distributions import (
    DISTRIBUTIONS,
    BernoulliDistribution,
    CategoricalDistribution,
    DiagGaussianDistribution,
    MultiCategoricalDistribution,
    make_action_distribution,
)

BOX = spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 4.0], np.float32))
#: space -> (family, head outputs, sample shape per row, sample dtype)
CASES = {
    "discrete": (spaces.Discrete(4), CategoricalDistribution, 4, (), torch.int64),
    "multidiscrete": (
        spaces.MultiDiscrete([3, 2], start=[1, -1]),
        MultiCategoricalDistribution,
        5,
        (2,),
        torch.int64,
    ),
    "multibinary": (spaces.MultiBinary(3), BernoulliDistribution, 3, (3,), torch.float32),
    "box": (BOX, DiagGaussianDistribution, 2, (2,), torch.float32),
}


def _reference(name, params, family):
    """The same distribution written with torch.distributions, one factor per column
    group, and how a sample maps onto its factors."""
    if name == "discrete":
        return [Categorical(logits=params)], lambda s: [s]
    if name == "multidiscrete":
        parts = params.split([3, 2], dim=-1)
        return [Categorical(logits=p) for p in parts], lambda s: [s[:, 0] - 1, s[:, 1] + 1]
    if name == "multibinary":
        return [Bernoulli(logits=params)], lambda s: [s]
    std = family.log_std.exp().expand_as(params)
    return [Normal(params, std)], lambda s: [s]


@pytest.mark.parametrize("name", CASES)
def test_each_space_type_gets_its_family_from_the_table(name):
    space, family_cls, outputs, shape, dtype = CASES[name]
    assert DISTRIBUTIONS[type(space)] is family_cls
    family = make_action_distribution(space)
    assert type(family) is family_cls and family.num_params == outputs
    assert family.sample_dtype is dtype
    torch.manual_seed(0)
    params = torch.randn(64, outputs)
    dist = family(params)
    sample = dist.sample()
    assert sample.shape == (64, *shape) and sample.dtype == dtype
    factors, split = _reference(name, params, family)
    log_prob = sum(
        f.log_prob(x.to(params) if name in ("multibinary", "box") else x).reshape(64, -1).sum(-1)
        for f, x in zip(factors, split(sample), strict=True)
    )
    torch.testing.assert_close(dist.log_prob(sample), log_prob)
    entropy = sum(f.entropy().reshape(64, -1).sum(-1) for f in factors)
    torch.testing.assert_close(dist.entropy(), entropy)
    actions = family.env_actions(sample)
    assert all(space.contains(np.asarray(a, dtype=space.dtype)) for a in actions)
    mode = family(params).sample(deterministic=True)
    assert torch.equal(mode, family(params).sample(deterministic=True))


def test_a_space_subclass_uses_its_parents_row():
    class Lanes(spaces.Discrete):
        pass

    assert type(make_action_distribution(Lanes(3))) is CategoricalDistribution


def test_discrete_start_is_added_to_samples_and_removed_for_log_probs():
    family = make_action_distribution(spaces.Discrete(3, start=5))
    dist = family(torch.tensor([[0.0, 0.0, 10.0]]))
    assert dist.sample(deterministic=True).tolist() == [7]
    torch.testing.assert_close(
        dist.log_prob(torch.tensor([7])), torch.tensor([0.0]), atol=1e-4, rtol=0
    )


@pytest.mark.parametrize("name", ["discrete", "multidiscrete"])
def test_masks_remove_actions_from_categorical_families(name):
    space, *_ = CASES[name]
    family = make_action_distribution(space)
    params = torch.zeros(500, family.num_params)
    mask = torch.ones_like(params, dtype=torch.bool)
    mask[:, 0] = False  # the first choice (of the first sub-action) is never allowed
    dist = family(params, mask)
    sample = dist.sample()
    first = sample if name == "discrete" else sample[:, 0]
    lowest = 0 if name == "discrete" else 1  # MultiDiscrete starts at 1
    assert (first != lowest).all()
    assert torch.isfinite(dist.entropy()).all()


@pytest.mark.parametrize("name", ["multibinary", "box"])
def test_masks_on_other_families_are_refused(name):
    space, *_ = CASES[name]
    family = make_action_distribution(space)
    with pytest.raises(ValueError, match="action masks apply to Discrete and MultiDiscrete"):
        family(torch.zeros(1, family.num_params), torch.ones(1, family.num_params))


def test_squashed_gaussian_stays_in_bounds_and_inverts():
    family = make_action_distribution(BOX, squash_output=True)
    torch.manual_seed(0)
    dist = family(torch.randn(256, 2) * 3)
    u = dist.sample()
    actions = family.actions(u)
    low, high = torch.as_tensor(BOX.low), torch.as_tensor(BOX.high)
    assert ((actions >= low) & (actions <= high)).all()
    inner = u.abs().max(dim=-1).values < 5  # atanh is exact away from saturation
    torch.testing.assert_close(family.samples(actions)[inner], u[inner], atol=1e-3, rtol=1e-3)
    # the log-density of the squashed action: Gaussian minus log|d action / d u|
    half = (high - low) / 2
    expected = Normal(dist.normal.mean, dist.normal.stddev).log_prob(u).sum(-1) - torch.log(
        half * (1 - torch.tanh(u) ** 2)
    ).sum(-1)
    torch.testing.assert_close(dist.log_prob(u)[inner], expected[inner], atol=1e-3, rtol=1e-4)


def test_squash_needs_bounded_actions():
    with pytest.raises(ValueError, match="squash_output needs bounded actions"):
        make_action_distribution(spaces.Box(-np.inf, np.inf, (2,)), squash_output=True)


@pytest.mark.parametrize(
    "space", [spaces.Text(5), spaces.Dict({"a": spaces.Discrete(2)}), spaces.Tuple([BOX])]
)
def test_a_space_without_a_family_is_a_clear_error(space):
    message = "no action distribution for .*supported action spaces are Discrete, MultiDiscrete"
    with pytest.raises(TypeError, match=message):
        make_action_distribution(space)
    obs = spaces.Box(-1.0, 1.0, (3,))
    spec = StochasticActorSpec(
        encoder_config={"arch": "mlp", "hidden_size": [8]}, head_config={"hidden_size": [8]}
    )
    with pytest.raises(TypeError, match=message):
        StochasticActor(obs, space, spec)
    with pytest.raises(TypeError, match=message):
        PPO(obs, space)


def test_the_actor_and_ppo_share_one_family():
    agent = PPO(spaces.Box(-1.0, 1.0, (3,)), BOX, action_std_init=0.5)
    assert isinstance(agent.actor.distribution, DiagGaussianDistribution)
    torch.testing.assert_close(agent.actor.distribution.log_std, torch.log(torch.full((2,), 0.5)))
    # the family's parameters are the actor's: trained by the optimiser, checkpointed
    assert "distribution.log_std" in agent.actor.state_dict()
    held = {id(p) for g in agent.optimizer.param_groups for p in g["params"]}
    assert id(agent.actor.distribution.log_std) in held
