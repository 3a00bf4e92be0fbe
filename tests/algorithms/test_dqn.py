"""DQN: masked epsilon-greedy acting, TD targets (plain, double, MultiDiscrete), soft
updates, learning, checkpoints, clones, mutations and the spec that builds it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from torch import nn

from agilerl.algorithms import DQN
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.models import DQNSpec

OBS = spaces.Box(-1.0, 1.0, (4,))
SMALL_NET = {
    "encoder_config": {"arch": "mlp", "hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
    "latent_dim": 16,
}


def _agent(action_space=None, seed=0, **kwargs):
    torch.manual_seed(seed)
    kwargs.setdefault("net_config", SMALL_NET)
    space = spaces.Discrete(3) if action_space is None else action_space
    return DQN(OBS, space, seed=seed, **kwargs)


def _obs(n, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (n, 4)).astype(np.float32)


def _random_batch(agent, n=32, seed=0):
    rng = np.random.default_rng(seed)
    action_space = agent.action_space
    action_space.seed(seed)
    actions = np.stack([action_space.sample() for _ in range(n)])
    buffer = ReplayBuffer(n)
    buffer.add(_obs(n, seed), actions, rng.normal(size=n), _obs(n, seed + 1), rng.random(n) < 0.2)
    return buffer.sample(n)


def _masks(n, nvec, seed=0):
    """Random 0/1 masks laid out like the Q-values, each sub-action allowing at least one
    choice."""
    rng = np.random.default_rng(seed)
    parts = []
    for choices in nvec:
        part = rng.random((n, choices)) < 0.4
        part[np.arange(n), rng.integers(choices, size=n)] = True
        parts.append(part)
    return np.concatenate(parts, axis=1).astype(np.int8)


# -- acting -------------------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [0.0, 0.5, 1.0])
def test_masked_actions_are_never_chosen(epsilon):
    agent = _agent(spaces.Discrete(6))
    obs, mask = _obs(256), _masks(256, [6])
    for _ in range(5):
        actions = agent.get_action(obs, epsilon, mask)
        assert actions.shape == (256,) and actions.dtype == np.int64
        assert mask[np.arange(256), actions].all()


def test_random_actions_cover_exactly_the_allowed_ones():
    agent = _agent(spaces.Discrete(5))
    mask = np.array([0, 1, 0, 1, 1], dtype=np.int8)  # one row for the whole batch
    actions = agent.get_action(_obs(3000), epsilon=1.0, action_mask=mask)
    counts = np.bincount(actions, minlength=5)
    assert counts[[0, 2]].sum() == 0
    assert counts[[1, 3, 4]].min() > 850  # ~1000 each


def test_greedy_actions_follow_the_masked_q_values():
    agent = _agent(spaces.Discrete(6))
    obs, mask = _obs(64), _masks(64, [6])
    with torch.no_grad():
        q = agent.actor(obs).numpy()
    np.testing.assert_array_equal(agent.get_action(obs), q.argmax(axis=1))
    np.testing.assert_array_equal(agent.eval_action(obs), q.argmax(axis=1))
    masked = np.where(mask.astype(bool), q, -np.inf).argmax(axis=1)
    np.testing.assert_array_equal(agent.eval_action(obs, mask), masked)


def test_batch_norm_networks_act_in_evaluation_mode():
    image = spaces.Box(0.0, 1.0, (3, 8, 8))
    cnn = {"arch": "cnn", "channel_size": [8], "kernel_size": [3], "stride_size": [2]}
    net = {"encoder_config": {**cnn, "layer_norm": True}, "head_config": {"hidden_size": [8]}}
    torch.manual_seed(0)
    agent = DQN(image, spaces.Discrete(3), net_config=net)
    obs = np.random.default_rng(0).random((6, 3, 8, 8)).astype(np.float32)
    agent.learn(  # running statistics away from their initial values
        {
            "obs": torch.as_tensor(obs),
            "action": torch.zeros(6, dtype=torch.long),
            "reward": torch.ones(6),
            "next_obs": torch.as_tensor(obs),
            "done": torch.zeros(6),
        }
    )
    norm = agent.actor.encoder.norms[0]
    stats = norm.running_mean.clone()
    with torch.no_grad():
        agent.actor.eval()
        expected = agent.actor(obs).argmax(dim=1).numpy()
        agent.actor.train()
    np.testing.assert_array_equal(agent.get_action(obs), expected)
    # Each row's action is its own: it does not depend on the rest of the batch.
    np.testing.assert_array_equal(agent.get_action(obs[:1]), expected[:1])
    assert agent.actor.training and torch.equal(norm.running_mean, stats)


def test_exploration_draws_come_from_the_agent_rng():
    first, second = _agent(seed=4), _agent(seed=4)
    obs = _obs(32)
    np.testing.assert_array_equal(first.get_action(obs, 0.5), second.get_action(obs, 0.5))
    mixed = _agent(seed=4).get_action(obs, 0.5)
    greedy = first.get_action(obs, 0.0)
    assert (mixed != greedy).any()  # some rows explored


def test_discrete_start_offsets_actions():
    agent = _agent(spaces.Discrete(3, start=-1))
    actions = agent.get_action(_obs(200), epsilon=1.0)
    assert set(actions.tolist()) == {-1, 0, 1}
    assert np.isfinite(agent.learn(_random_batch(agent))["td_loss"])


def test_multidiscrete_actions_masks_and_learning():
    space = spaces.MultiDiscrete([[3, 2], [4, 3]], start=[[1, 0], [0, 5]])
    agent = _agent(space)
    obs = _obs(128)
    actions = agent.get_action(obs, epsilon=0.5)
    assert actions.shape == (128, 2, 2)
    assert all(space.contains(a) for a in actions)
    mask = _masks(128, [3, 2, 4, 3])
    for epsilon in (0.0, 1.0):
        index = agent.get_action(obs, epsilon, mask).reshape(128, 4) - space.start.reshape(1, 4)
        columns = index + np.array([0, 3, 5, 9])
        assert mask[np.arange(128)[:, None], columns].all()
    assert np.isfinite(agent.learn(_random_batch(agent))["td_loss"])


def test_bad_masks_and_spaces_are_refused():
    agent = _agent(spaces.Discrete(3))
    with pytest.raises(ValueError, match="shape"):
        agent.get_action(_obs(2), 0.0, np.ones((2, 4)))
    with pytest.raises(ValueError, match="no allowed action"):
        agent.get_action(_obs(2), 0.0, np.array([[1, 0, 0], [0, 0, 0]]))
    with pytest.raises(TypeError, match="Discrete or MultiDiscrete"):
        DQN(OBS, spaces.Box(-1, 1, (2,)))
    with pytest.raises(ValueError, match="gamma"):
        DQN(OBS, spaces.Discrete(2), gamma=1.5)


# -- TD targets on hand-made Q-values ----------------------------------------------------
class TableQ(nn.Module):
    """Q-values read from a table indexed by the (integer) observation."""

    def __init__(self, table):
        super().__init__()
        self.table = nn.Parameter(torch.tensor(table, dtype=torch.float32))

    def forward(self, obs):
        return self.table[torch.as_tensor(obs).long()]


def _with_tables(agent, online, target):
    agent.actor, agent.actor_target = TableQ(online), TableQ(target)
    agent.optimizer = torch.optim.Adam(agent.actor.parameters(), lr=0.0)


# State 0 is where actions are taken; state 1 is the next state.
ONLINE = [[0.5, 2.0, -1.0], [1.0, 5.0, 3.0]]
TARGET = [[9.0, 9.0, 9.0], [2.0, 0.0, 4.0]]


@pytest.mark.parametrize(
    ("double", "bootstrap"),
    [(False, 4.0), (True, 0.0)],  # max of the target row / target at the online argmax (1)
)
def test_td_targets_plain_and_double(double, bootstrap):
    agent = _agent(gamma=0.5, double=double)
    _with_tables(agent, ONLINE, TARGET)
    batch = {
        "obs": torch.tensor([0, 0]),
        "action": torch.tensor([0, 2]),
        "reward": torch.tensor([1.0, 3.0]),
        "next_obs": torch.tensor([1, 1]),
        "done": torch.tensor([False, True]),
    }
    # Row 1: Q(0, 0) = 0.5, target 1 + 0.5 * bootstrap. Row 2 terminates: Q(0, 2) = -1,
    # target 3 exactly.
    expected = ((0.5 - (1.0 + 0.5 * bootstrap)) ** 2 + (-1.0 - 3.0) ** 2) / 2
    metrics = agent.learn(batch)
    assert metrics["td_loss"] == pytest.approx(expected)
    assert metrics["q_mean"] == pytest.approx((0.5 - 1.0) / 2)  # Q of the actions taken


@pytest.mark.parametrize(("double", "bootstraps"), [(False, (7.0, 4.0)), (True, (1.0, 0.0))])
def test_td_targets_per_multidiscrete_sub_action(double, bootstraps):
    agent = _agent(spaces.MultiDiscrete([2, 3]), gamma=1.0, double=double)
    # Columns: sub-action 0 has two choices, sub-action 1 three.
    online = [[0.0, 1.0, 2.0, 3.0, 4.0], [6.0, 5.0, 1.0, 9.0, 2.0]]
    target = [[0.0] * 5, [1.0, 7.0, 4.0, 0.0, 3.0]]
    _with_tables(agent, online, target)
    batch = {
        "obs": torch.tensor([0]),
        "action": torch.tensor([[1, 2]]),
        "reward": torch.tensor([0.5]),
        "next_obs": torch.tensor([1]),
        "done": torch.tensor([False]),
    }
    # Plain: each sub-action's own target maximum, 7 and 4. Double: the online argmaxes
    # (choice 0 of the first sub-action, choice 1 of the second) valued by the target: 1, 0.
    taken = np.array([1.0, 4.0])  # Q(0, a0=1), Q(0, a1=2)
    targets = 0.5 + np.array(bootstraps)
    assert agent.learn(batch)["td_loss"] == pytest.approx(np.mean((taken - targets) ** 2))


# -- updates ------------------------------------------------------------------------------
def _params(net):
    return [p.detach().clone() for p in net.parameters()]


def test_soft_update_is_polyak_averaging():
    agent = _agent(tau=0.25)
    with torch.no_grad():
        for p in agent.actor.parameters():
            p.add_(1.0)  # make online and target differ
    online, target = _params(agent.actor), _params(agent.actor_target)
    agent.soft_update()
    for new, o, t in zip(agent.actor_target.parameters(), online, target, strict=True):
        torch.testing.assert_close(new, 0.25 * o + 0.75 * t)
    assert all(torch.equal(p, o) for p, o in zip(agent.actor.parameters(), online, strict=True))


def test_learn_steps_the_optimiser_then_soft_updates_the_target():
    agent = _agent(tau=0.1)
    target = _params(agent.actor_target)
    agent.learn(_random_batch(agent))
    online = _params(agent.actor)
    assert any(not torch.equal(o, t) for o, t in zip(online, target, strict=True))
    for new, o, t in zip(agent.actor_target.parameters(), online, target, strict=True):
        torch.testing.assert_close(new, 0.1 * o + 0.9 * t)


class _ClippedDQN(DQN):
    max_grad_norm = 10.0  # as RainbowDQN (10) and CQN (1) set it


@pytest.mark.parametrize(("cls", "clipped"), [(DQN, False), (_ClippedDQN, True)])
def test_dqn_steps_unclipped_as_agilerl_and_a_subclass_norm_clips(cls, clipped):
    torch.manual_seed(0)
    agent = cls(OBS, spaces.Discrete(3), seed=0, net_config=SMALL_NET)
    batch = _random_batch(agent)
    batch["reward"] = batch["reward"] * 1e6  # a huge TD error
    norms = []
    step = agent.optimizer.step

    def recording_step(*args, **kwargs):
        grads = [p.grad for p in agent.actor.parameters()]
        norms.append(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item())
        return step(*args, **kwargs)

    agent.optimizer.step = recording_step
    agent.learn(batch)
    if clipped:
        assert norms[0] == pytest.approx(10.0, rel=1e-4)  # clipped down from far above
    else:
        assert DQN.max_grad_norm is None and norms[0] > 1e4  # the gradient as computed


@pytest.mark.parametrize("double", [False, True])
def test_learning_reduces_the_td_error_on_a_fixed_batch(double):
    agent = _agent(lr=5e-3, gamma=0.5, tau=0.05, double=double)
    batch = _random_batch(agent, n=64)
    # 80 steps: with the encoder's latent layer-normalised (AgileRL's layout) fitting a
    # random batch is a little slower than with a linear latent (double: 9.8x in 60 steps).
    losses = [agent.learn(batch)["td_loss"] for _ in range(80)]
    assert np.mean(losses[-5:]) < 0.1 * np.mean(losses[:5])


# -- checkpoints, clones, mutations -------------------------------------------------------
def _assert_same_optimizer_state(first, second):
    a, b = first.optimizer.state_dict(), second.optimizer.state_dict()
    assert a["param_groups"] == b["param_groups"]
    assert a["state"].keys() == b["state"].keys()
    for key, values in a["state"].items():
        for name, value in values.items():
            assert torch.equal(value, b["state"][key][name]), name


def test_checkpoint_round_trip_restores_everything(tmp_path):
    agent = _agent(spaces.Discrete(4), double=True, lr=5e-4, batch_size=32)
    batch = _random_batch(agent)
    for _ in range(3):
        agent.learn(batch)
    agent.mutate_architecture("head.add_node", seed=1)  # a saved spec that differs
    agent.learn(batch)
    path = tmp_path / "dqn.ckpt"
    agent.save_checkpoint(path)
    loaded = DQN.load(path)
    obs = _obs(16)
    with torch.no_grad():
        assert torch.equal(agent.actor(obs), loaded.actor(obs))
        assert torch.equal(agent.actor_target(obs), loaded.actor_target(obs))
    _assert_same_optimizer_state(agent, loaded)
    assert loaded.hyperparameters() == agent.hyperparameters()
    assert loaded.actor.spec == agent.actor.spec
    np.testing.assert_array_equal(loaded.get_action(obs, 0.5), agent.get_action(obs, 0.5))
    # Training continues identically.
    assert loaded.learn(batch) == agent.learn(batch)
    for a, b in zip(agent.actor_target.parameters(), loaded.actor_target.parameters(), strict=True):
        assert torch.equal(a, b)


def test_clone_is_an_independent_copy():
    agent = _agent()
    batch = _random_batch(agent)
    agent.learn(batch)
    twin = agent.clone(index=3)
    assert twin.index == 3 and agent.index == 0
    _assert_same_optimizer_state(agent, twin)
    before = _params(agent.actor)
    twin.learn(batch)
    twin.mutate_architecture("encoder.add_layer", seed=0)
    assert all(torch.equal(p, b) for p, b in zip(agent.actor.parameters(), before, strict=True))
    assert len(agent.actor.spec.encoder_config.hidden_size) == 1
    assert not any(p is q for p in twin.actor.parameters() for q in agent.actor.parameters())


def test_every_architecture_mutation_keeps_training_consistent():
    names = _agent().architecture_mutations()
    assert names and not any(n.endswith("change_activation") for n in names)
    batch = None
    for i, name in enumerate(names):
        agent = _agent()
        batch = batch or _random_batch(agent)
        agent.learn(batch)
        spec, optimizer = agent.actor.spec, agent.optimizer
        if agent.mutate_architecture(name, seed=i):
            # The target restarts from the mutated actor.
            assert agent.actor_target.spec == agent.actor.spec != spec, name
            target = agent.actor_target.state_dict()
            assert all(torch.equal(v, target[k]) for k, v in agent.actor.state_dict().items())
        else:  # bounds forbid it: nothing changes, the optimiser keeps its state
            assert agent.actor.spec == spec and agent.optimizer is optimizer, name
        optimised = [p for group in agent.optimizer.param_groups for p in group["params"]]
        assert [id(p) for p in optimised] == [id(p) for p in agent.actor.parameters()], name
        assert np.isfinite(agent.learn(batch)["td_loss"]), name
        assert agent.get_action(_obs(4), 0.5).shape == (4,)


def test_hyperparameter_mutation_stays_in_range():
    agent = _agent(
        hp_config={"lr": {"min": 1e-5, "max": 1e-3}, "batch_size": {"min": 8, "max": 64}}
    )
    assert set(agent.hp_config) == {"lr", "batch_size", "learn_step"}
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(200):
        name, _, new = agent.mutate_hyperparameter(rng)
        seen.add(name)
        bounds = agent.hp_config[name]
        assert bounds.min <= new <= bounds.max and getattr(agent, name) == new
        assert agent.optimizer.param_groups[0]["lr"] == agent.lr
    assert isinstance(agent.batch_size, int) and isinstance(agent.learn_step, int)
    assert seen == {"lr", "batch_size", "learn_step"}
    assert np.isfinite(agent.learn(_random_batch(agent))["td_loss"])


# -- construction and integration ---------------------------------------------------------
def test_spec_builds_a_dqn_with_its_values():
    assert DQNSpec.algo_class() is DQN
    spec = DQNSpec()
    agent = spec.build_algorithm(OBS, spaces.Discrete(2), index=0)
    assert isinstance(agent, DQN) and agent.index == 0
    assert agent.hyperparameters() == {
        "batch_size": 128,
        "lr": 1e-4,
        "learn_step": 5,
        "gamma": 0.99,
        "tau": 1e-3,
        "double": False,
        "cudagraphs": False,
    }
    custom = DQNSpec(double=True, tau=0.01, cudagraphs=True).build_algorithm(
        OBS, spaces.Discrete(2), index=2
    )
    assert (custom.double, custom.tau, custom.cudagraphs, custom.index) == (True, 0.01, True, 2)
    # cudagraphs is a CUDA-only speed-up: on the CPU it changes nothing.
    assert np.isfinite(custom.learn(_random_batch(custom))["td_loss"])


def test_dict_observations_from_buffer_to_learning():
    space = spaces.Dict({"pos": spaces.Box(-1, 1, (3,)), "tile": spaces.Discrete(5)})
    torch.manual_seed(0)
    agent = DQN(space, spaces.Discrete(2), batch_size=8, seed=0)
    space.seed(0)
    samples = [space.sample() for _ in range(16)]
    obs = {k: np.stack([s[k] for s in samples]) for k in space.spaces}
    buffer = ReplayBuffer(32)
    actions = agent.get_action(obs, epsilon=0.5)
    buffer.add(obs, actions, np.ones(16), obs, np.zeros(16, bool))
    assert np.isfinite(agent.learn(buffer.sample(agent.batch_size))["td_loss"])


def test_evaluation_on_a_vector_env_uses_greedy_actions():
    env = gym.vector.SyncVectorEnv(
        [lambda: gym.make("CartPole-v1")] * 2, autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )
    agent = DQN(env.single_observation_space, env.single_action_space, net_config=SMALL_NET)
    fitness = agent.test(env, max_steps=20, seed=0)
    assert 1 <= fitness <= 20 and agent.fitness == [fitness]
    env.close()
