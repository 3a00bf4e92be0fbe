"""Recurrent PPO: the LSTM state carried and reset per environment (rollouts, acting,
evaluation, predict), the BPTT sequence layout, sequence learning reproducing the
rollout, checkpoints / clones / mutations, refusals, and learning on CartPole with the
velocities hidden (where a feed-forward policy cannot)."""

from __future__ import annotations

import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from support import ROOT

from agilerl.algorithms import PPO, RLAlgorithm
from agilerl.cli import main
from agilerl.components.rollout_buffer import RolloutBuffer
from agilerl.models import PPOSpec
from agilerl.testing.partial_observability import KeepObservations

OBS = spaces.Box(-10.0, 10.0, (2,))
LSTM_NET = {
    "encoder_config": {"arch": "lstm", "hidden_state_size": 8},
    "head_config": {"hidden_size": [8]},
    "latent_dim": 8,
}


class ToyEnv(gym.Env):
    """Observation ``[step / 10, env id]``, reward 1; terminates after ``term_at`` steps
    or is truncated after ``trunc_at``."""

    def __init__(self, action_space, env_id=0, term_at=None, trunc_at=None):
        self.observation_space = OBS
        self.action_space = action_space
        self.env_id, self.term_at, self.trunc_at = env_id, term_at, trunc_at

    def _obs(self):
        return np.array([self.t / 10, self.env_id], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        terminated = self.term_at is not None and self.t >= self.term_at
        truncated = self.trunc_at is not None and self.t >= self.trunc_at and not terminated
        return self._obs(), 1.0, terminated, truncated, {}


def vec_env(action_space, ends):
    """One ToyEnv per entry of ``ends``: ``(term_at, trunc_at)``."""
    fns = [
        lambda i=i, e=e: ToyEnv(action_space, env_id=i, term_at=e[0], trunc_at=e[1])
        for i, e in enumerate(ends)
    ]
    return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def make_agent(action_space=None, **kwargs):
    options = {
        "learn_step": 12,
        "batch_size": 8,
        "update_epochs": 2,
        "recurrent": True,
        "max_seq_len": 4,
        "net_config": LSTM_NET,
    }
    return PPO(OBS, action_space or spaces.Discrete(2), **{**options, **kwargs})


def lstm_step(agent, obs, state):
    """The actor encoder's next ``(h, c)`` after one observation (the reference)."""
    x = torch.as_tensor(np.asarray(obs, dtype=np.float32))
    with torch.no_grad():
        return agent.actor.encoder.forward_with_state(x, state)[1]


def zero_state(agent, n):
    return agent.actor.encoder.initial_state(n)


# -- the state in rollouts ----------------------------------------------------------------
def test_rollout_state_is_carried_per_env_and_zeroed_only_where_an_episode_ended():
    # max_seq_len 1: a sequence starts at every step, so the buffer keeps every step's state
    agent = make_agent(max_seq_len=1)
    env = vec_env(spaces.Discrete(2), [(3, None), (None, None)])  # env 0 ends with step 3
    obs, info = env.reset(seed=0)
    obs, info, _ = agent.collect_rollouts(env, obs, info)
    buf = agent.rollout_buffer
    stored_h, stored_c = buf.hidden["actor"]  # (steps, envs, layers, H)
    assert stored_h.shape == (6, 2, 1, 8)
    state = zero_state(agent, 2)
    for t in range(6):
        torch.testing.assert_close(stored_h[t].transpose(0, 1), state[0])
        torch.testing.assert_close(stored_c[t].transpose(0, 1), state[1])
        state = lstm_step(agent, buf.obs[t], state)
        ended = buf.dones[t].bool()
        state = tuple(x * (~ended).float().reshape(1, -1, 1) for x in state)
    # step 3 is env 0's first step of a new episode: its state is zero, env 1's is not
    assert stored_h[3, 0].abs().sum() == 0 and stored_c[3, 0].abs().sum() == 0
    assert stored_h[3, 1].abs().sum() > 0
    # the next rollout continues from the state the last one ended with...
    carried = agent._rollout_state["actor"]
    torch.testing.assert_close(carried[0], state[0])
    agent.collect_rollouts(env, obs, info)
    torch.testing.assert_close(buf.hidden["actor"][0][0].transpose(0, 1), carried[0])
    assert buf.hidden["actor"][0][0].abs().sum() > 0
    # ...unless the episodes in flight were forgotten
    agent.reset_rollouts()
    agent.collect_rollouts(env, *env.reset(seed=1))
    assert buf.hidden["actor"][0][0].abs().sum() == 0


def test_truncation_bootstraps_with_the_state_after_the_last_step():
    agent = make_agent(gamma=0.9)
    env = vec_env(spaces.Discrete(2), [(None, 3), (None, None)])
    obs, info = env.reset(seed=0)
    agent.collect_rollouts(env, obs, info)
    buf = agent.rollout_buffer
    state = zero_state(agent, 1)
    for t in range(3):  # env 0's episode: steps 0, 1, 2
        state = lstm_step(agent, buf.obs[t, :1], state)
    with torch.no_grad():
        latent, _ = agent.critic.encoder.forward_with_state(torch.tensor([[0.3, 0.0]]), state)
        final_value = agent.critic.head(latent).item()
    assert buf.rewards[2, 0].item() == pytest.approx(1.0 + 0.9 * final_value, abs=1e-5)


# -- the sequence layout -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "stride", "starts"),
    [
        ("chunked", 4, [0, 4, 8]),
        ("fifty_percent_overlap", 2, [0, 2, 4, 6]),
        ("maximum", 1, [0, 1, 2, 3, 4, 5, 6]),
    ],
)
def test_sequences_follow_the_bptt_sequence_type(kind, stride, starts):
    from agilerl.components.rollout_buffer import SEQUENCE_STRIDES

    assert SEQUENCE_STRIDES[kind](4) == stride
    steps, envs = 10, 2
    buf = RolloutBuffer(steps, envs, OBS, spaces.Discrete(100), seq_len=4, seq_stride=stride)
    dones = np.zeros((steps, envs))
    dones[2, 0] = dones[5, 1] = 1.0
    code = lambda t: np.array([10 * t + e for e in range(envs)])  # noqa: E731
    for t in range(steps):
        buf.add(
            np.stack([code(t), code(t)], axis=1),
            code(t),
            np.ones(envs),
            dones[t],
            torch.zeros(envs),
            torch.zeros(envs),
            hidden_state={"h": torch.as_tensor(code(t), dtype=torch.float32).reshape(envs, 1)},
        )
    buf.compute_returns_and_advantages(torch.zeros(envs))
    assert buf.sequence_starts() == starts
    assert buf.hidden["h"].shape[0] == -(-steps // stride)  # states kept at starts only
    (batch,) = list(buf.sequence_minibatches(batch_size=4 * 1000))
    assert batch.valid.shape == (len(starts) * envs, 4)
    covered = np.zeros((steps, envs), dtype=int)
    seen = set()
    for s in range(batch.valid.shape[0]):
        start, env = divmod(int(batch.obs[s, 0, 0]), 10)
        seen.add((start, env))
        assert batch.hidden["h"][s].item() == 10 * start + env  # the state at its start
        for j in range(4):
            t = start + j
            assert batch.valid[s, j].item() == (t < steps)
            if t < steps:
                assert batch.obs[s, j, 0].item() == 10 * t + env
                covered[t, env] += 1
            expected_reset = j > 0 and t < steps and dones[t - 1, env] == 1.0
            if t < steps:
                assert batch.resets[s, j].item() == expected_reset
    assert seen == {(s, e) for s in starts for e in range(envs)}
    assert (covered >= 1).all()  # every step is in some sequence
    if kind == "chunked":
        assert (covered == 1).all()
    # the flat fields hold the valid steps, sequence by sequence
    flat_obs = batch.obs[..., 0][batch.valid]
    assert torch.equal(batch.actions, flat_obs.long())
    # a minibatch holds batch_size // seq_len whole sequences
    sizes = [b.valid.shape[0] for b in buf.sequence_minibatches(batch_size=8)]
    assert sizes[:-1] == [2] * (len(sizes) - 1) and sum(sizes) == len(starts) * envs


def test_max_seq_len_null_makes_one_sequence_per_env_and_rollout():
    agent = make_agent(max_seq_len=None)
    env = vec_env(spaces.Discrete(2), [(3, None), (None, 4)])
    agent.collect_rollouts(env, *env.reset(seed=0))
    buf = agent.rollout_buffer
    assert buf.seq_len == 6 and buf.sequence_starts() == [0]
    batches = list(buf.sequence_minibatches(batch_size=6))
    assert [b.valid.shape for b in batches] == [(1, 6), (1, 6)]


# -- learning on sequences ------------------------------------------------------------------
@pytest.mark.parametrize("share", [True, False])
@pytest.mark.parametrize(
    "action_space", [spaces.Discrete(3), spaces.Box(-1.0, 1.0, (2,))], ids=["discrete", "box"]
)
def test_sequence_evaluation_reproduces_the_rollout(share, action_space):
    # Starting each sequence from its stored state and resetting where an episode ended
    # inside it, the learner sees what the actor saw: every ratio is exactly 1.
    torch.manual_seed(0)
    agent = make_agent(action_space, share_encoders=share, learn_step=30, max_seq_len=4)
    env = vec_env(action_space, [(3, None), (None, 4), (7, None)])
    agent.collect_rollouts(env, *env.reset(seed=0))
    assert set(agent.initial_hidden_state(1)) == ({"actor"} if share else {"actor", "critic"})
    steps = resets = 0
    with torch.no_grad():
        for batch in agent.rollout_buffer.sequence_minibatches(batch_size=8):
            dist, value = agent._forward_sequences(batch, agent.actor, agent.critic)
            torch.testing.assert_close(dist.log_prob(batch.actions), batch.log_probs)
            torch.testing.assert_close(value, batch.values)
            steps += int(batch.valid.sum())
            resets += int((batch.resets & batch.valid).sum())
    assert steps == 30 and resets > 0  # episodes did end inside sequences


def test_learning_on_sequences_steps_per_minibatch_of_whole_sequences():
    agent = make_agent(learn_step=24, batch_size=8, max_seq_len=4, update_epochs=3)
    env = vec_env(spaces.Discrete(2), [(5, None), (None, None)])
    agent.collect_rollouts(env, *env.reset(seed=0))
    before = [p.detach().clone() for p in agent.actor.encoder.parameters()]
    metrics = agent.learn()
    assert all(math.isfinite(v) for v in metrics.values())
    # 12 steps x 2 envs in sequences of 4: 6 sequences, 2 per minibatch, 3 epochs
    assert metrics["updates"] == 3 * 3
    changed = [
        not torch.equal(a, b) for a, b in zip(before, agent.actor.encoder.parameters(), strict=True)
    ]
    assert any(changed)  # gradients reached the LSTM through time


# -- acting: evaluation and predict ----------------------------------------------------------
def test_acting_carries_the_state_per_env_and_episodes_ended_resets_only_those():
    agent = make_agent()
    obs = np.array([[0.1, 0.0], [0.2, 1.0]], np.float32)
    agent.eval_action(obs)
    first = agent.hidden_state["actor"][0].clone()
    agent.get_action(obs)
    second = agent.hidden_state["actor"][0].clone()
    assert not torch.equal(first, second)  # the state moved on
    torch.testing.assert_close(second, lstm_step(agent, obs, lstm_step(agent, obs, None))[0])
    agent.episodes_ended(np.array([True, False]))
    h, c = agent.hidden_state["actor"]
    assert h[:, 0].abs().sum() == 0 and c[:, 0].abs().sum() == 0
    torch.testing.assert_close(h[:, 1], second[:, 1])
    agent.episodes_ended(np.ones(3, dtype=bool))  # another batch of envs: afresh
    assert agent.hidden_state is None


def test_predict_keeps_the_state_until_an_episode_starts():
    agent = make_agent(spaces.Box(-1.0, 1.0, (1,)))
    obs = np.array([0.5, 0.0], np.float32)
    first, state = agent.predict(obs, episode_start=True, deterministic=True)
    # same observation, later in the episode: another state
    again, _ = agent.predict(obs, deterministic=True)
    restarted, _ = agent.predict(obs, episode_start=True, deterministic=True)
    np.testing.assert_array_equal(first, restarted)
    assert not np.array_equal(first, again)
    expected = lstm_step(agent, obs[None], None)  # one step since the restart
    torch.testing.assert_close(agent.hidden_state["actor"][0], expected[0])
    # the state comes back as numpy (h, c) per network, as SB3's recurrent predict
    h, c = state["actor"]
    assert isinstance(h, np.ndarray) and h.shape == c.shape and h.shape[1] == 1
    np.testing.assert_allclose(h, expected[0].numpy(), rtol=1e-6)


def test_predict_acts_from_the_state_it_is_given():
    agent = make_agent(spaces.Box(-1.0, 1.0, (1,)))
    obs = np.array([0.5, 0.0], np.float32)
    _, after_one = agent.predict(obs, episode_start=True, deterministic=True)
    second, after_two = agent.predict(obs, deterministic=True)
    agent.predict(obs, episode_start=True, deterministic=True)  # the agent moves on ...
    # ... and a state handed back makes it act as it did from that state
    replayed, replayed_state = agent.predict(obs, state=after_one, deterministic=True)
    np.testing.assert_array_equal(replayed, second)
    for mine, theirs in zip(replayed_state["actor"], after_two["actor"], strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6)


class _Spy(gym.vector.VectorWrapper):
    """Records, at every step, the observation acted on and the agent's state after it."""

    def __init__(self, env, agent):
        super().__init__(env)
        self.agent, self.log = agent, []

    def reset(self, **kwargs):
        self.obs, info = self.env.reset(**kwargs)
        return self.obs, info

    def step(self, action):
        h = self.agent.hidden_state["actor"][0].clone()
        out = self.env.step(action)
        self.log.append((self.obs, h, np.logical_or(out[2], out[3])))
        self.obs = out[0]
        return out


def test_evaluation_resets_each_envs_state_at_its_episode_end():
    agent = make_agent()
    env = _Spy(vec_env(spaces.Discrete(2), [(2, None), (3, None), (5, None)]), agent)
    agent.hidden_state = {"actor": tuple(torch.ones(1, 3, 8) for _ in range(2))}  # stale
    assert agent.test(env) == pytest.approx((2 + 3 + 5) / 3)
    agent.test(env)  # a second evaluation starts afresh too
    starting = np.ones(3, dtype=bool)  # which envs start an episode at this step
    checked = 0
    for obs, h, ended in env.log:
        expected = lstm_step(agent, obs, zero_state(agent, 3))[0]
        for i in np.flatnonzero(starting):
            torch.testing.assert_close(h[:, i], expected[:, i])
            checked += 1
        starting = ended
    assert checked >= 6


# -- checkpoints, clones, mutations ----------------------------------------------------------
def _trained(**kwargs):
    torch.manual_seed(0)
    agent = make_agent(**kwargs)
    env = vec_env(spaces.Discrete(2), [(3, None), (None, 5)])
    agent.collect_rollouts(env, *env.reset(seed=0))
    agent.learn()
    return agent


def _episode_actions(agent, steps=6):
    """Greedy actions of a fresh episode of 2 envs, the state carried from step to step."""
    agent.episodes_ended(np.ones(2, dtype=bool))
    rng = np.random.default_rng(3)
    return [agent.eval_action(rng.normal(size=(2, 2)).astype(np.float32)) for _ in range(steps)]


@pytest.mark.parametrize("share", [True, False])
def test_checkpoint_and_clone_round_trip_a_recurrent_agent(tmp_path, share):
    agent = _trained(share_encoders=share)
    agent.save_checkpoint(tmp_path / "rppo.pt")
    for twin in (RLAlgorithm.load(tmp_path / "rppo.pt"), agent.clone(index=3)):
        assert twin.recurrent and twin.hidden_state is None  # episodes start afresh
        assert twin.max_seq_len == 4 and twin.bptt_sequence_type == "chunked"
        assert twin.actor.spec == agent.actor.spec
        expected = _episode_actions(agent)
        got = _episode_actions(twin)
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True))
        torch.testing.assert_close(twin.hidden_state["actor"][0], agent.hidden_state["actor"][0])
        env = vec_env(spaces.Discrete(2), [(3, None), (None, 5)])
        twin.collect_rollouts(env, *env.reset(seed=0))
        assert all(math.isfinite(v) for v in twin.learn().values())


@pytest.mark.parametrize("share", [True, False])
def test_architecture_mutations_resize_the_state_and_keep_learning(share):
    agent = _trained(share_encoders=share)
    names = agent.architecture_mutations()
    assert {"encoder.add_node", "encoder.add_layer"} <= set(names)
    env = vec_env(spaces.Discrete(2), [(3, None), (None, 5)])
    obs, info = env.reset(seed=0)
    for i, name in enumerate(names):
        agent.eval_action(obs)  # a state of the size before the mutation
        if not agent.mutate_architecture(name, seed=i):
            continue
        spec = agent.actor.encoder.spec
        for h in agent.initial_hidden_state(2).values():
            assert h[0].shape == (spec.num_layers, 2, spec.hidden_state_size)
        agent.eval_action(obs)  # a stale state is replaced, not fed to the new LSTM
        assert agent.hidden_state["actor"][0].shape[-1] == spec.hidden_state_size
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        assert all(math.isfinite(v) for v in agent.learn().values())
    twin = agent.clone()
    assert twin.actor.spec == agent.actor.spec


# -- construction and refusals -----------------------------------------------------------------
def test_spec_and_manifest_style_network_sections_build_an_lstm():
    agent = PPOSpec(recurrent=True, learn_step=64).build_algorithm(
        OBS,
        spaces.Discrete(2),
        index=0,
        net_config={"latent_dim": 16, "encoder_config": {"hidden_state_size": 16}},
    )
    assert agent.recurrent and agent.actor.spec.encoder_config.arch == "lstm"
    assert agent.critic.encoder is agent.actor.encoder


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"net_config": {"encoder_config": {"arch": "mlp", "hidden_size": [8]}}},
            r"recurrent: true needs an LSTM encoder \(network.encoder_config.arch: lstm",
        ),
        (
            {"net_config": {"encoder_config": {"hidden_size": [8]}}},
            r"recurrent: true builds an LSTM encoder where network.arch",
        ),
        (
            {"bptt_sequence_type": "random"},
            r"PPO\(bptt_sequence_type='random'\): must be one of 'chunked'",
        ),
        ({"max_seq_len": 0}, r"PPO\(max_seq_len=0\): must be >= 1"),
    ],
)
def test_combinations_that_cannot_work_are_refused_naming_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_agent(**kwargs)


def test_a_dict_observation_cannot_be_recurrent():
    obs = spaces.Dict({"a": spaces.Box(-1.0, 1.0, (2,))})
    with pytest.raises(ValueError, match="needs an LSTM encoder .*on a vector observation space"):
        PPO(obs, spaces.Discrete(2), recurrent=True)


# -- learning outcome ------------------------------------------------------------------------
def _cartpole_without_velocities(num_envs):
    fns = [lambda: KeepObservations(gym.make("CartPole-v1"))] * num_envs
    return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def _train_on_hidden_velocities(recurrent, steps, seed=0):
    """Evaluation fitness (8 episodes) after ``steps`` environment steps of PPO on
    CartPole-v1 observing only the cart position and the pole angle."""
    torch.manual_seed(seed)
    env = _cartpole_without_velocities(16)
    encoder = {"arch": "lstm", "hidden_state_size": 64}
    if not recurrent:
        encoder = {"arch": "mlp", "hidden_size": [64]}
    agent = PPO(
        env.single_observation_space,
        env.single_action_space,
        recurrent=recurrent,
        max_seq_len=16,
        learn_step=1024,
        batch_size=256,
        lr=1.5e-3,
        ent_coef=0.0,
        net_config={
            "encoder_config": encoder,
            "head_config": {"hidden_size": [64]},
            "latent_dim": 64,
        },
        seed=seed,
    )
    obs, info = env.reset(seed=seed)
    taken = 0
    while taken < steps:
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        agent.learn()
        taken += agent.rollout_steps
    return agent.test(_cartpole_without_velocities(8), seed=100)


@pytest.mark.slow
def test_recurrent_ppo_balances_cartpole_without_velocities_where_feed_forward_cannot():
    # Same budget, seed and settings; only the encoder differs. Measured here: recurrent
    # 190 (seeds 1, 2: 232, 212), feed-forward 40 (a random policy scores about 22).
    budget = 40_960
    recurrent = _train_on_hidden_velocities(True, budget)
    feed_forward = _train_on_hidden_velocities(False, budget)
    assert recurrent >= 150, recurrent
    assert feed_forward < 100, feed_forward


def test_the_recurrent_config_trains_a_few_hundred_steps_through_agilerl_train(tmp_path, capsys):
    out = tmp_path / "run"
    small = [
        "--set", "training.max_steps=256",
        "--set", "training.evo_steps=128",
        "--set", "training.eval_steps=30",
        "--set", "environment.num_envs=2",
        "--set", "algorithm.learn_step=64",
        "--set", "algorithm.batch_size=32",
    ]  # fmt: skip
    rc = main(["train", str(ROOT / "configs/ppo_recurrent.yaml"), *small, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    history = json.loads((out / "history.json").read_text())
    assert [r["generation"] for r in history] == [0, 1] and history[-1]["steps"] == 256
    best = PPO.load(out / "best_agent.pt")
    assert best.recurrent and best.observation_space.shape == (2,)  # velocities hidden
    assert best.actor.spec.encoder_config.arch == "lstm" and best.steps >= 128
