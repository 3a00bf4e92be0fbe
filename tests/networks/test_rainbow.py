"""RainbowQNetwork: shapes, distributions, noise, exact growth, clone and a learning check."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.models import RainbowQNetworkSpec
from agilerl.networks import RainbowQNetwork
from agilerl.networks.rainbow import NoisyLinear

BATCH = 4
N_ACTIONS = 3
ATOMS = 11
OBS_SPACES = {
    "box": spaces.Box(-1.0, 1.0, (6,)),
    "image": spaces.Box(0.0, 1.0, (3, 16, 16)),
    "dict": spaces.Dict({"img": spaces.Box(0.0, 1.0, (3, 16, 16)), "vec": spaces.Box(-1, 1, (3,))}),
}
ENCODERS = {
    "box": {"arch": "mlp", "hidden_size": [16]},
    "image": {"arch": "cnn", "channel_size": [8, 8], "kernel_size": [3, 3], "stride_size": [2, 1]},
    "dict": {"arch": "multiinput"},
}


def _net(space_name="box", layer_norm=True, **kwargs):
    head = {"hidden_size": [16], "layer_norm": layer_norm}
    spec = RainbowQNetworkSpec(encoder_config=ENCODERS[space_name], head_config=head, latent_dim=16)
    kwargs = {"num_atoms": ATOMS, "v_min": -10.0, "v_max": 10.0, **kwargs}
    return RainbowQNetwork(OBS_SPACES[space_name], spaces.Discrete(N_ACTIONS), spec, **kwargs)


def _obs(space_name, seed=0):
    space = OBS_SPACES[space_name]
    space.seed(seed)
    samples = [space.sample() for _ in range(BATCH)]
    if isinstance(space, spaces.Dict):
        return {k: np.stack([s[k] for s in samples]) for k in space.spaces}
    return np.stack(samples)


@pytest.mark.parametrize("space_name", list(OBS_SPACES))
def test_shapes_probabilities_and_gradients(space_name):
    torch.manual_seed(0)
    net = _net(space_name)
    obs = _obs(space_name)
    probs = net.dist(obs)
    q = net(obs)
    assert probs.shape == (BATCH, N_ACTIONS, ATOMS)
    assert q.shape == (BATCH, N_ACTIONS) and q.dtype == torch.float32
    torch.testing.assert_close(probs.sum(-1), torch.ones(BATCH, N_ACTIONS))
    assert (probs >= 0).all()
    torch.testing.assert_close(net.log_dist(obs).exp(), probs)
    torch.testing.assert_close(net.support, torch.linspace(-10.0, 10.0, ATOMS))
    net.train()
    net.reset_noise()
    (net(obs).sum() + net.log_dist(obs).mean()).backward()
    missing = [name for name, p in net.named_parameters() if p.grad is None]
    assert missing == []


def test_q_is_support_weighted_mean():
    net = _net().eval()
    obs = torch.randn(BATCH, 6)
    probs = net.dist(obs)
    expected = torch.einsum("bna,a->bn", probs, torch.linspace(-10.0, 10.0, ATOMS))
    torch.testing.assert_close(net(obs), expected)
    assert ((net(obs) >= -10.0) & (net(obs) <= 10.0)).all()


def test_dueling_combination():
    net = _net().eval()
    latent = net.extract_features(torch.randn(BATCH, 6))
    value = net.head.value(latent).view(BATCH, 1, ATOMS)
    adv = net.head.advantage(latent).view(BATCH, N_ACTIONS, ATOMS)
    torch.testing.assert_close(net.head(latent), value + adv - adv.mean(1, keepdim=True))


def test_eval_is_deterministic_and_train_is_noisy():
    torch.manual_seed(0)
    net = _net()
    obs = torch.randn(BATCH, 6)
    net.eval()
    before = net(obs)
    net.reset_noise()
    torch.testing.assert_close(net(obs), before, rtol=0, atol=0)
    net.train()
    noisy = net(obs)
    torch.testing.assert_close(net(obs), noisy, rtol=0, atol=0)  # same noise sample
    assert not torch.allclose(noisy, before)
    net.reset_noise()
    assert not torch.allclose(net(obs), noisy)


def test_noisy_linear_sigma_init():
    layer = NoisyLinear(16, 4, sigma_init=0.5)
    torch.testing.assert_close(layer.weight_sigma, torch.full((4, 16), 0.5 / 4))
    assert layer.weight_epsilon.abs().sum() > 0


@pytest.mark.parametrize("name", ["encoder.add_node", "head.add_node", "grow_latent"])
@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("layer_norm", [True, False])
def test_growth_is_exact(name, train, layer_norm):
    # without layer norm, new hidden units are live: the noisy layer's zeroed columns matter
    torch.manual_seed(0)
    net = _net(layer_norm=layer_norm, v_min=-1.0, v_max=1.0)
    net.train(train)
    obs = torch.randn(BATCH, 6)
    q, probs = net(obs), net.dist(obs)
    old = net.spec.model_copy(deep=True)
    for seed in range(4):  # several draws, so the last head layer also grows
        assert net.mutate(name, np.random.default_rng(seed))
    assert net.spec != old
    torch.testing.assert_close(net(obs), q, atol=1e-5, rtol=0)
    torch.testing.assert_close(net.dist(obs), probs, atol=1e-5, rtol=0)


def test_mutations_keep_spec_in_sync_and_state_dict_round_trips():
    net = _net()
    assert "head.add_node" in net.mutation_methods()
    assert "grow_latent" in net.mutation_methods()
    for i, name in enumerate(net.mutation_methods()):
        net.mutate(name, np.random.default_rng(i))
        assert net.spec.head_config == net.head.spec
        assert net.head.value.spec == net.head.advantage.spec == net.head.spec
        assert net.spec.encoder_config == net.encoder.spec
    fresh = RainbowQNetwork(
        OBS_SPACES["box"],
        spaces.Discrete(N_ACTIONS),
        net.spec,
        num_atoms=ATOMS,
        v_min=-10,
        v_max=10,
    )
    fresh.load_state_dict(net.state_dict())
    obs = torch.randn(BATCH, 6)
    fresh.eval()
    net.eval()
    torch.testing.assert_close(fresh(obs), net(obs))


def test_clone_is_independent_copy():
    net = _net(noise_std=0.3)
    net.mutate("head.add_node", np.random.default_rng(0))
    twin = net.clone()
    assert twin.spec == net.spec
    assert (twin.num_atoms, twin.v_min, twin.v_max, twin.noise_std) == (ATOMS, -10.0, 10.0, 0.3)
    obs = torch.randn(BATCH, 6)
    torch.testing.assert_close(twin(obs), net(obs))  # train mode: same noise sample too
    twin.mutate("grow_latent", np.random.default_rng(0))
    with torch.no_grad():
        for p in twin.parameters():
            p.add_(1.0)
    assert twin.spec != net.spec
    assert not torch.allclose(twin(obs), net(obs))


def test_rejects_non_discrete_actions():
    spec = RainbowQNetworkSpec(encoder_config=ENCODERS["box"], head_config={"hidden_size": [8]})
    with pytest.raises(TypeError):
        RainbowQNetwork(OBS_SPACES["box"], spaces.Box(-1, 1, (2,)), spec)


def test_cross_entropy_loss_goes_down():
    torch.manual_seed(0)
    net = _net(noise_std=0.1)
    obs = torch.randn(32, 6)
    target = torch.softmax(torch.randn(32, N_ACTIONS, ATOMS) * 3, dim=-1)

    def loss_fn():
        return -(target * net.log_dist(obs)).sum(-1).mean()

    net.eval()
    with torch.no_grad():
        start = loss_fn().item()
    net.train()
    optim = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(50):
        net.reset_noise()
        optim.zero_grad()
        loss_fn().backward()
        optim.step()
    net.eval()
    with torch.no_grad():
        end = loss_fn().item()
    assert end < start - 0.1
