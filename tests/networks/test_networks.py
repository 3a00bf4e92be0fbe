"""RL networks: spaces x networks matrix, encoder registry, twin mutations, round trips."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.models import (
    CnnSpec,
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    LstmSpec,
    MlpSpec,
    MultiInputSpec,
    QNetworkSpec,
    RainbowQNetworkSpec,
    SimbaSpec,
    StochasticActorSpec,
    ValueNetworkSpec,
)
from agilerl.models.networks import ENCODER_SPECS
from agilerl.networks import (
    ENCODER_BUILDERS,
    ContinuousQNetwork,
    DeterministicActor,
    QNetwork,
    RainbowQNetwork,
    StochasticActor,
    ValueNetwork,
    infer_encoder_spec,
    preprocess,
)

BATCH = 4
OBS_SPACES = {
    "box": spaces.Box(-1.0, 1.0, (6,)),
    "image": spaces.Box(0.0, 1.0, (3, 16, 16)),
    "discrete": spaces.Discrete(5),
    "multidiscrete": spaces.MultiDiscrete([3, 4]),
    "multibinary": spaces.MultiBinary(5),
    "dict": spaces.Dict({"img": spaces.Box(0.0, 1.0, (3, 16, 16)), "vec": spaces.Box(-1, 1, (3,))}),
    "tuple": spaces.Tuple((spaces.Box(-1.0, 1.0, (2,)), spaces.Discrete(3), spaces.MultiBinary(3))),
}
BOX_ACTIONS = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
MD_ACTIONS = spaces.MultiDiscrete([3, 2, 4], start=[0, -1, 2])  # a non-zero start included
MB_ACTIONS = spaces.MultiBinary(4)


def _encoder(space):
    spec = infer_encoder_spec(space)
    if isinstance(spec, CnnSpec):  # keep the test fast
        spec = CnnSpec(channel_size=[8, 8], kernel_size=[3, 3], stride_size=[2, 1])
    return spec.model_dump()


def _spec(cls, space, **extra):
    return cls(
        encoder_config=_encoder(space),
        head_config={"hidden_size": [16]},
        latent_dim=16,
        **extra,
    )


NETWORKS = {
    "q": lambda s: QNetwork(s, spaces.Discrete(3), _spec(QNetworkSpec, s)),
    "q_multidiscrete": lambda s: QNetwork(s, MD_ACTIONS, _spec(QNetworkSpec, s)),
    "value": lambda s: ValueNetwork(s, None, _spec(ValueNetworkSpec, s)),
    "det_actor": lambda s: DeterministicActor(s, BOX_ACTIONS, _spec(DeterministicActorSpec, s)),
    "stoch_discrete": lambda s: StochasticActor(
        s, spaces.Discrete(3), _spec(StochasticActorSpec, s)
    ),
    "stoch_multidiscrete": lambda s: StochasticActor(s, MD_ACTIONS, _spec(StochasticActorSpec, s)),
    "stoch_multibinary": lambda s: StochasticActor(s, MB_ACTIONS, _spec(StochasticActorSpec, s)),
    "stoch_box": lambda s: StochasticActor(s, BOX_ACTIONS, _spec(StochasticActorSpec, s)),
    "stoch_squashed": lambda s: StochasticActor(
        s, BOX_ACTIONS, _spec(StochasticActorSpec, s, squash_output=True)
    ),
    "continuous_q": lambda s: ContinuousQNetwork(s, BOX_ACTIONS, _spec(ContinuousQNetworkSpec, s)),
    "rainbow": lambda s: RainbowQNetwork(
        s, spaces.Discrete(3), _spec(RainbowQNetworkSpec, s), num_atoms=11, v_min=-10.0, v_max=10.0
    ),
}


def _obs(space, seed=0):
    space.seed(seed)
    return [space.sample() for _ in range(BATCH)]


def _batch(space, samples):
    if isinstance(space, spaces.Dict):
        return {k: np.stack([s[k] for s in samples]) for k in space.spaces}
    if isinstance(space, spaces.Tuple):
        return tuple(np.stack([s[i] for s in samples]) for i in range(len(space.spaces)))
    return np.stack(samples)


def _all_in(space, actions):
    """Every sample of a batch of actions lies in ``space``."""
    actions = actions.detach().cpu().numpy()
    return all(space.contains(a) for a in actions)


#: kind -> (action shape per sample, dtype) of a stochastic actor's actions
STOCHASTIC = {
    "stoch_discrete": ((), torch.int64),
    "stoch_multidiscrete": ((3,), torch.int64),
    "stoch_multibinary": ((4,), torch.float32),
    "stoch_box": ((2,), torch.float32),
    "stoch_squashed": ((2,), torch.float32),
}


def _loss_and_check(kind, net, obs):
    if kind in ("q", "value"):
        out = net(obs)
        assert out.shape == (BATCH, 3 if kind == "q" else 1) and out.dtype == torch.float32
        if kind == "q":
            assert _all_in(net.action_space, net.greedy_action(out))
        return out.sum()
    if kind == "q_multidiscrete":
        out = net(obs)
        assert out.shape == (BATCH, 9) and out.dtype == torch.float32
        assert [q.shape for q in net.split_q_values(out)] == [(BATCH, 3), (BATCH, 2), (BATCH, 4)]
        greedy = net.greedy_action(out)
        assert greedy.shape == (BATCH, 3) and greedy.dtype == torch.int64
        assert _all_in(MD_ACTIONS, greedy)
        return out.sum()
    if kind == "det_actor":
        action = net(obs)
        assert action.shape == (BATCH, 2) and action.dtype == torch.float32
        assert (action >= net.action_low).all() and (action <= net.action_high).all()
        return action.sum()
    if kind == "rainbow":
        probs = net.dist(obs)
        assert probs.shape == (BATCH, 3, 11)
        torch.testing.assert_close(probs.sum(-1), torch.ones(BATCH, 3))
        out = net(obs)
        assert out.shape == (BATCH, 3) and out.dtype == torch.float32
        return out.sum() + net.log_dist(obs).sum()
    if kind == "continuous_q":
        out = net(obs, torch.as_tensor(np.stack([BOX_ACTIONS.sample() for _ in range(BATCH)])))
        assert out.shape == (BATCH, 1) and out.dtype == torch.float32
        return out.sum()
    action, log_prob, entropy = net(obs)
    shape, dtype = STOCHASTIC[kind]
    assert action.shape == (BATCH, *shape) and action.dtype == dtype
    assert log_prob.shape == (BATCH,) and entropy.shape == (BATCH,)
    assert torch.isfinite(log_prob).all() and torch.isfinite(entropy).all()
    if kind != "stoch_box":  # an unsquashed Gaussian may leave the Box
        assert _all_in(net.action_space, action)
    if kind != "stoch_box" and kind != "stoch_squashed":  # discrete: probabilities <= 1
        assert (log_prob <= 0).all() and (entropy >= 0).all()
    # the same actions, evaluated again (as PPO does), get the same log-probabilities
    log_prob2, entropy2 = net.evaluate_actions(obs, action.detach())
    atol = 1e-3 if kind == "stoch_squashed" else 1e-5
    torch.testing.assert_close(log_prob2, log_prob, atol=atol, rtol=1e-4)
    torch.testing.assert_close(entropy2, entropy)
    loss = log_prob.sum() + entropy.sum() + log_prob2.sum()
    return loss + (action.sum() if action.requires_grad else 0)


@pytest.mark.parametrize("space_name", list(OBS_SPACES))
@pytest.mark.parametrize("kind", list(NETWORKS))
def test_network_matrix(kind, space_name):
    space = OBS_SPACES[space_name]
    torch.manual_seed(0)
    net = NETWORKS[kind](space)
    obs = _batch(space, _obs(space))
    _loss_and_check(kind, net, obs).backward()
    missing = [name for name, p in net.named_parameters() if p.grad is None]
    assert missing == []
    dead = [name for name, p in net.named_parameters() if not p.grad.abs().sum() > 0]
    assert dead == []


def test_every_encoder_spec_has_a_builder():
    assert set(ENCODER_BUILDERS) == set(ENCODER_SPECS)


@pytest.mark.parametrize(
    ("space", "kwargs", "expected"),
    [
        (OBS_SPACES["box"], {}, MlpSpec),
        (OBS_SPACES["image"], {}, CnnSpec),
        (OBS_SPACES["dict"], {}, MultiInputSpec),
        (OBS_SPACES["tuple"], {}, MultiInputSpec),
        (OBS_SPACES["box"], {"recurrent": True}, LstmSpec),
        (OBS_SPACES["box"], {"simba": True}, SimbaSpec),
    ],
)
def test_infer_encoder_spec(space, kwargs, expected):
    spec = infer_encoder_spec(space, **kwargs)
    assert isinstance(spec, expected)
    if expected is MlpSpec:
        assert spec.hidden_size == [64, 64]
    if expected is CnnSpec:
        assert (spec.channel_size, spec.kernel_size, spec.stride_size) == ([32, 32], [3, 3], [2, 2])
        large = infer_encoder_spec(spaces.Box(0.0, 1.0, (3, 84, 84)))
        assert (large.kernel_size, large.stride_size) == ([8, 4], [4, 2])


@pytest.mark.parametrize(
    "encoder",
    [
        {"arch": "lstm", "hidden_state_size": 16},
        {"arch": "simba", "hidden_size": 16, "num_blocks": 1},
    ],
)
def test_recurrent_and_simba_encoders_build(encoder):
    spec = ValueNetworkSpec(encoder_config=encoder, head_config={"hidden_size": [8]}, latent_dim=8)
    net = ValueNetwork(OBS_SPACES["box"], None, spec)
    assert net(torch.randn(BATCH, 6)).shape == (BATCH, 1)


def test_preprocess_one_hot():
    x = preprocess(np.array([0, 4]), spaces.Discrete(5))
    torch.testing.assert_close(x, torch.eye(5)[[0, 4]])
    x = preprocess(np.array([[2, 1]]), spaces.MultiDiscrete([3, 4]))
    torch.testing.assert_close(x, torch.tensor([[0.0, 0, 1, 0, 1, 0, 0]]))


def _pair(space_name="box"):
    space = OBS_SPACES[space_name]
    return (
        StochasticActor(space, spaces.Discrete(3), _spec(StochasticActorSpec, space)),
        ValueNetwork(space, None, _spec(ValueNetworkSpec, space)),
    )


@pytest.mark.parametrize("space_name", ["box", "image", "dict"])
def test_twin_mutations_give_equal_architectures(space_name):
    actor, critic = _pair(space_name)
    assert actor.mutation_methods() == critic.mutation_methods()
    for i, name in enumerate(actor.mutation_methods()):
        a = actor.mutate(name, np.random.default_rng(i))
        c = critic.mutate(name, np.random.default_rng(i))
        assert a == c
        assert actor.spec.encoder_config == critic.spec.encoder_config
        assert actor.spec.head_config == critic.spec.head_config
        assert actor.spec.latent_dim == critic.spec.latent_dim
        # the network's spec follows its parts
        assert actor.spec.encoder_config == actor.encoder.spec
        assert actor.spec.head_config == actor.head.spec


def test_grow_latent_is_exact_and_state_dict_round_trips():
    space = OBS_SPACES["box"]
    net = ContinuousQNetwork(space, BOX_ACTIONS, _spec(ContinuousQNetworkSpec, space))
    net.eval()
    obs, action = torch.randn(BATCH, 6), torch.rand(BATCH, 2)
    before = net(obs, action)
    assert net.mutate("grow_latent", np.random.default_rng(0))
    torch.testing.assert_close(net(obs, action), before, atol=1e-5, rtol=0)
    rng = np.random.default_rng(1)
    for name in ["encoder.add_node", "head.add_layer", "shrink_latent", "head.add_node"]:
        net.mutate(name, rng)
    fresh = ContinuousQNetwork(space, BOX_ACTIONS, net.spec)
    fresh.load_state_dict(net.state_dict())
    fresh.eval()
    torch.testing.assert_close(fresh(obs, action), net(obs, action))


def test_clone_is_independent_copy():
    actor, _ = _pair("dict")
    actor.mutate("encoder.cnn.add_channel", np.random.default_rng(0))
    twin = actor.clone()
    obs = _batch(OBS_SPACES["dict"], _obs(OBS_SPACES["dict"]))
    torch.manual_seed(0)
    logits = actor.head(actor.extract_features(obs))
    torch.testing.assert_close(twin.head(twin.extract_features(obs)), logits)
    assert twin.spec == actor.spec
    twin.mutate("grow_latent", np.random.default_rng(0))
    assert twin.spec != actor.spec


def test_squashed_log_prob_matches_evaluate_and_change_of_variables():
    space = OBS_SPACES["box"]
    actor = StochasticActor(
        space, BOX_ACTIONS, _spec(StochasticActorSpec, space, squash_output=True)
    )
    obs = torch.randn(BATCH, 6)
    torch.manual_seed(3)
    action, log_prob, _ = actor(obs)
    log_prob2, _ = actor.evaluate_actions(obs, action)
    torch.testing.assert_close(log_prob2, log_prob, atol=1e-3, rtol=1e-4)
    # reference: u ~ N(mean, std); a = low + (tanh(u) + 1) * (high - low) / 2
    dist = actor.distribution(actor.head(actor.extract_features(obs))).normal
    low, high = actor.distribution.squash.low, actor.distribution.squash.high
    half = (high - low) / 2
    u = torch.atanh((action - low) / half - 1)
    ref = dist.log_prob(u).sum(-1) - torch.log(half * (1 - torch.tanh(u) ** 2)).sum(-1)
    torch.testing.assert_close(log_prob, ref, atol=1e-3, rtol=1e-4)


def test_deterministic_actor_rejects_other_output_activations():
    space = OBS_SPACES["box"]
    spec = DeterministicActorSpec(
        encoder_config={"arch": "mlp", "hidden_size": [8]},
        head_config={"hidden_size": [8], "output_activation": "Sigmoid"},
    )
    with pytest.raises(ValueError):
        DeterministicActor(space, BOX_ACTIONS, spec)
    ok = _spec(DeterministicActorSpec, space)
    assert DeterministicActor(space, BOX_ACTIONS, ok).spec.head_config.output_activation == "Tanh"


def test_random_seed_makes_weights_reproducible():
    space = OBS_SPACES["box"]
    spec = _spec(QNetworkSpec, space, random_seed=7)
    a, b = QNetwork(space, spaces.Discrete(3), spec), QNetwork(space, spaces.Discrete(3), spec)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)


def _actor(action_space, space_name="box"):
    space = OBS_SPACES[space_name]
    torch.manual_seed(0)
    return StochasticActor(space, action_space, _spec(StochasticActorSpec, space))


def test_multidiscrete_actor_is_independent_categoricals():
    actor = _actor(MD_ACTIONS)
    obs = torch.randn(BATCH, 6)
    logits = actor.head(actor.extract_features(obs))
    parts = logits.split([3, 2, 4], dim=-1)  # documented layout: sub-actions in order
    dists = [torch.distributions.Categorical(logits=p) for p in parts]
    start = torch.tensor([0, -1, 2])
    action, log_prob, entropy = actor(obs)
    ref = sum(d.log_prob(action[:, i] - start[i]) for i, d in enumerate(dists))
    torch.testing.assert_close(log_prob, ref)
    torch.testing.assert_close(entropy, sum(d.entropy() for d in dists))
    mode, _, _ = actor(obs, deterministic=True)
    torch.testing.assert_close(mode, torch.stack([p.argmax(-1) for p in parts], -1) + start)
    # numpy actions, as stored in a rollout buffer, evaluate alike
    log_prob2, _ = actor.evaluate_actions(obs, action.numpy())
    torch.testing.assert_close(log_prob2, log_prob)


def test_multibinary_actor_is_independent_bernoullis():
    actor = _actor(MB_ACTIONS)
    obs = torch.randn(BATCH, 6)
    logits = actor.head(actor.extract_features(obs))
    dist = torch.distributions.Bernoulli(logits=logits)
    action, log_prob, entropy = actor(obs)
    assert set(action.unique().tolist()) <= {0.0, 1.0}
    torch.testing.assert_close(log_prob, dist.log_prob(action).sum(-1))
    torch.testing.assert_close(entropy, dist.entropy().sum(-1))
    mode, _, _ = actor(obs, deterministic=True)
    torch.testing.assert_close(mode, (logits > 0).float())
    log_prob2, _ = actor.evaluate_actions(obs, action.numpy().astype(np.int8))
    torch.testing.assert_close(log_prob2, log_prob)


@pytest.mark.parametrize(
    "action_space",
    [
        spaces.MultiDiscrete([[2, 3], [4, 2]], start=[[1, 0], [0, -2]]),
        spaces.MultiBinary([2, 3]),
    ],
)
def test_multi_dimensional_action_spaces_keep_their_shape(action_space):
    actor = _actor(action_space)
    obs = torch.randn(BATCH, 6)
    action, log_prob, _ = actor(obs)
    assert action.shape == (BATCH, *action_space.shape)
    assert _all_in(action_space, action)
    torch.testing.assert_close(actor.evaluate_actions(obs, action)[0], log_prob)
    if isinstance(action_space, spaces.MultiDiscrete):
        space = OBS_SPACES["box"]
        q = QNetwork(space, action_space, _spec(QNetworkSpec, space))
        values = q(obs)
        assert values.shape == (BATCH, 11)
        greedy = q.greedy_action(values)
        assert greedy.shape == (BATCH, 2, 2) and _all_in(action_space, greedy)


def test_multidiscrete_q_network_mutates_and_round_trips():
    space = OBS_SPACES["box"]
    net = QNetwork(space, MD_ACTIONS, _spec(QNetworkSpec, space))
    net.eval()
    obs = torch.randn(BATCH, 6)
    before = net(obs)
    assert net.mutate("grow_latent", np.random.default_rng(0))
    torch.testing.assert_close(net(obs), before, atol=1e-5, rtol=0)
    net.mutate("head.add_node", np.random.default_rng(1))
    twin = net.clone()
    twin.eval()
    torch.testing.assert_close(twin(obs), net(obs))
    assert _all_in(MD_ACTIONS, twin.greedy_action(twin(obs)))


@pytest.mark.parametrize("action_space", [BOX_ACTIONS, MB_ACTIONS])
def test_q_network_rejects_non_discrete_actions(action_space):
    with pytest.raises(TypeError):
        QNetwork(OBS_SPACES["box"], action_space, _spec(QNetworkSpec, OBS_SPACES["box"]))


def test_preprocess_multibinary_is_flat_float():
    x = preprocess(np.array([[[1, 0, 1], [0, 0, 1]]], dtype=np.int8), spaces.MultiBinary([2, 3]))
    assert x.dtype == torch.float32
    torch.testing.assert_close(x, torch.tensor([[1.0, 0, 1, 0, 0, 1]]))
    space = spaces.MultiBinary([2, 3])
    spec = _spec(ValueNetworkSpec, space)
    assert ValueNetwork(space, None, spec)(_batch(space, _obs(space))).shape == (BATCH, 1)


@pytest.mark.parametrize("kind", ["q", "stoch_box", "rainbow"])
def test_to_moves_parameters_and_buffers(kind):
    """``to`` reaches every parameter and buffer, and mutation keeps the new placement
    (CPU here; the same call moves to an accelerator)."""
    space = OBS_SPACES["box"]
    net = NETWORKS[kind](space).to("cpu", torch.float64)
    assert {p.dtype for p in net.parameters()} == {torch.float64}
    net.mutate("encoder.add_node", np.random.default_rng(0))
    floating = [t for t in [*net.parameters(), *net.buffers()] if t.is_floating_point()]
    assert {t.dtype for t in floating} == {torch.float64}
    obs = torch.as_tensor(_batch(space, _obs(space)), dtype=torch.float64)
    out = net(obs)
    first = out[0] if isinstance(out, tuple) else out
    assert torch.isfinite(first.double()).all()


def _q_network(space, **encoder):
    spec = QNetworkSpec(
        encoder_config={"arch": "mlp", "hidden_size": [16], **encoder},
        head_config={"hidden_size": [16]},
        latent_dim=16,
    )
    return QNetwork(space, spaces.Discrete(3), spec)


def test_mlp_encoder_latent_ends_like_a_hidden_layer():
    """A network's MLP encoder ends Linear -> LayerNorm -> the hidden activation (the
    latent is normalised and activated, as in AgileRL), not a scaled-down linear layer."""
    space = OBS_SPACES["box"]
    net = _q_network(space)
    encoder = net.encoder
    assert isinstance(encoder.out_norm, torch.nn.LayerNorm)
    assert isinstance(encoder.out_act, torch.nn.ReLU)
    latent = encoder(torch.randn(BATCH, 6))
    assert (latent >= 0).all()
    # Normalised before the ReLU: a quarter or more of the features of every sample are on.
    assert ((latent > 0).float().mean(dim=1) > 0.25).all()
    # output_vanish is not applied under the norm: the output layer keeps its init scale.
    assert encoder.out.weight.std() > 0.5 * encoder.linears[0].weight.std()
    # The head's output layer still vanishes.
    assert net.head.out.weight.abs().max() < 0.5 * net.head.linears[0].weight.abs().max()


def test_mlp_encoder_output_follows_activation_and_spec():
    space = OBS_SPACES["box"]
    net = _q_network(space)
    net.mutate("encoder.change_activation", np.random.default_rng(0))
    activation = net.encoder.spec.activation
    assert activation != "ReLU"
    assert type(net.encoder.out_act) is type(net.encoder.acts[0])
    linear = _q_network(space, output_activation="Identity")
    assert isinstance(linear.encoder.out_act, torch.nn.Identity)
    # Without layer_norm there is no output norm, and output_vanish scales the layer again.
    plain = _q_network(space, layer_norm=False)
    assert isinstance(plain.encoder.out_norm, torch.nn.Identity)
    vanished = plain.encoder.out.weight.abs().max()
    assert vanished < 0.5 * plain.encoder.linears[0].weight.abs().max()


def test_grow_latent_is_exact_through_the_encoder_output_norm():
    space = OBS_SPACES["box"]
    net = _q_network(space)
    obs = torch.randn(BATCH, 6)
    before_latent, before = net.encoder(obs), net(obs)
    assert net.mutate("grow_latent", np.random.default_rng(0))
    grown = net.encoder(obs)
    assert grown.shape[1] > before_latent.shape[1]
    torch.testing.assert_close(grown[:, : before_latent.shape[1]], before_latent)
    torch.testing.assert_close(net(obs), before)
    fresh = QNetwork(space, spaces.Discrete(3), net.spec)
    fresh.load_state_dict(net.state_dict())
    torch.testing.assert_close(fresh(obs), net(obs))
