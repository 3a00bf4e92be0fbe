"""RainbowDQN: constructor defaults are the schema's, the C51 projection by hand, the loss
paths (1-step, n-step, combined, importance-weighted), noisy exploration against noiseless
evaluation, checkpoints and clones, probe convergence with every replay kind, the replay
wiring of the off-policy loop and the trainer's refusals."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from support import ROOT
from support.killed_runs import kill_at_first_checkpoint

from agilerl.algorithms import DQN, RainbowDQN
from agilerl.algorithms.core.population import Population
from agilerl.algorithms.rainbow_dqn import project_distribution
from agilerl.cli import main
from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay import Replay, annealed_beta
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.single_agent.off_policy import train_off_policy, with_final_obs
from agilerl.files import checkpoints
from agilerl.models import RainbowDQNSpec
from agilerl.testing.probe_envs import (
    ActionRewardEnv,
    ConstantRewardEnv,
    DiscountedRewardEnv,
    ObservationRewardEnv,
    TruncatedRewardEnv,
)
from agilerl.trainer import LocalTrainer, TrainerError
from agilerl.training.run_checkpoint import load_run

OBS = spaces.Box(-1.0, 1.0, (3,), np.float32)
SMALL_NET = {
    "encoder_config": {"arch": "mlp", "hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
    "latent_dim": 16,
}


def _agent(**kwargs):
    options = {"net_config": SMALL_NET, "seed": 0, **kwargs}
    return RainbowDQN(OBS, spaces.Discrete(3), **options)


# -- construction ----------------------------------------------------------------------------
def test_a_spec_builds_the_agent_it_describes():
    spec = RainbowDQNSpec(num_atoms=11, v_min=-1.0, v_max=4.0, noise_std=0.1, beta=0.5)
    agent = spec.build_algorithm(OBS, spaces.Discrete(2), index=3)
    assert isinstance(agent, RainbowDQN) and agent.index == 3
    assert agent.actor.num_atoms == 11 and agent.actor.noise_std == 0.1
    np.testing.assert_allclose(agent.actor.support.numpy(), np.linspace(-1, 4, 11))
    assert agent.hyperparameters()["beta"] == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_atoms": 1}, r"RainbowDQN\(num_atoms=1\): must be at least 2"),
        ({"v_min": 5.0, "v_max": 5.0}, "v_min must be below v_max"),
        ({"beta": 1.5}, r"RainbowDQN\(beta=1.5\): must be >= 0 and <= 1"),
        ({"prior_eps": -1.0}, r"RainbowDQN\(prior_eps=-1.0\): must be >= 0"),
        ({"n_step": 0}, r"RainbowDQN\(n_step=0\): must be >= 1"),
        ({"noise_std": -0.1}, r"RainbowDQN\(noise_std=-0.1\): must be >= 0"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        _agent(**kwargs)


@pytest.mark.parametrize("name", RainbowDQN.fixed_settings)
def test_the_settings_the_network_is_built_from_cannot_mutate(name):
    with pytest.raises(ValueError, match=f"hp_config.{name}: RainbowDQN's num_atoms, v_min"):
        _agent(hp_config={name: {"min": 1, "max": 5}})
    agent = _agent(hp_config={"beta": {"min": 0.2, "max": 0.8}, "lr": {"min": 1e-4, "max": 1e-2}})
    assert {"beta", "lr"} <= set(agent.hp_config)  # beside the default ranges


def test_only_discrete_actions():
    with pytest.raises(TypeError, match="RainbowDQN needs a Discrete action space"):
        RainbowDQN(OBS, spaces.MultiDiscrete([2, 2]))


# -- the C51 projection ----------------------------------------------------------------------
def test_projection_equals_a_hand_computation():
    support = torch.arange(5.0)  # atoms 0..4, one apart
    probs = torch.tensor(
        [
            [0.1, 0.2, 0.3, 0.4, 0.0],  # 0.5 + 0.5 z = 0.5, 1, 1.5, 2, 2.5
            [0.1, 0.2, 0.3, 0.4, 0.0],  # terminal: all at 3.2
            [0.1, 0.2, 0.3, 0.4, 0.0],  # z + 1, clamped at the top atom
            [0.5, 0.5, 0.0, 0.0, 0.0],  # below v_min: all at atom 0
        ]
    )
    reward = torch.tensor([0.5, 3.2, 1.0, -7.0])
    discount = torch.tensor([0.5, 0.5, 1.0, 0.9])
    done = torch.tensor([False, True, False, False])
    projected = project_distribution(probs, reward, discount, done, support)
    expected = [
        # 0.5 -> half to atoms 0 and 1; 1.5 -> half to 1 and 2; 2.5 has no mass
        [0.05, 0.05 + 0.2 + 0.15, 0.15 + 0.4, 0.0, 0.0],
        [0.0, 0.0, 0.0, 0.8, 0.2],  # 3.2: 0.8 to atom 3, 0.2 to atom 4
        [0.0, 0.1, 0.2, 0.3, 0.4],  # 4 and 5 (clamped to 4) both land on atom 4
        [1.0, 0.0, 0.0, 0.0, 0.0],
    ]
    np.testing.assert_allclose(projected.numpy(), expected, atol=1e-6)


def test_projection_keeps_the_mass_and_the_mean_where_nothing_is_clamped():
    gen = torch.Generator().manual_seed(0)
    support = torch.linspace(-10, 10, 51)
    probs = torch.softmax(torch.randn(64, 51, generator=gen), -1)
    # shrunk towards 0 and shifted by at most 1: stays inside [-10, 10]
    reward = torch.rand(64, generator=gen) * 2 - 1
    discount = torch.full((64,), 0.9)
    done = torch.rand(64, generator=gen) < 0.3
    projected = project_distribution(probs, reward, discount, done, support)
    np.testing.assert_allclose(projected.sum(-1).numpy(), 1.0, atol=1e-5)
    mean = (probs * support).sum(-1)
    expected = reward + discount * (~done) * mean
    np.testing.assert_allclose((projected * support).sum(-1).numpy(), expected.numpy(), atol=1e-4)


# -- acting ----------------------------------------------------------------------------------
def test_exploration_is_noisy_and_evaluation_is_the_mean_network():
    agent = _agent(noise_std=5.0)
    obs = np.random.default_rng(0).uniform(-1, 1, (256, 3)).astype(np.float32)
    with torch.no_grad():
        agent.actor.eval()
        mean_greedy = agent.actor(obs).argmax(-1).numpy()
        agent.actor.train()
    np.testing.assert_array_equal(agent.eval_action(obs), mean_greedy)
    assert (agent.explore(obs) != mean_greedy).any()  # the noise changes some choices
    # ... with the same noise sample until the agent learns, then a fresh one
    np.testing.assert_array_equal(agent.explore(obs), agent.explore(obs))
    before = agent.explore(obs)
    agent.learn(_batch(agent, 32))
    assert (agent.explore(obs) != before).any()
    assert agent.actor.training  # acting leaves the network's mode as it was


def test_masks_are_respected_by_both_policies():
    agent = _agent(noise_std=5.0)
    obs = np.zeros((4, 3), dtype=np.float32)
    mask = np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 1, 1]], dtype=bool)
    for act in (agent.explore, agent.eval_action):
        actions = act(obs, mask)
        assert all(mask[i, a] for i, a in enumerate(actions))


def test_the_epsilon_schedule_is_ignored():
    from agilerl.components.exploration import EpsilonSchedule

    agent = _agent()
    agent.configure_exploration(EpsilonSchedule(1.0, 1.0, 1.0))  # would be all random
    obs = np.zeros((64, 3), dtype=np.float32)
    assert len(set(agent.explore(obs).tolist())) == 1  # one greedy choice for one obs
    assert agent.exploration_metrics() == {}


# -- learning --------------------------------------------------------------------------------
def _batch(agent, rows, seed=0, n_step=False, weights=None):
    gen = torch.Generator().manual_seed(seed)
    batch = {
        "obs": torch.rand(rows, 3, generator=gen),
        "action": torch.randint(0, 3, (rows,), generator=gen),
        "reward": torch.rand(rows, generator=gen),
        "next_obs": torch.rand(rows, 3, generator=gen),
        "done": torch.rand(rows, generator=gen) < 0.2,
    }
    if n_step:
        batch["n_step"] = {
            **{k: batch[k] for k in ("obs", "action")},
            "reward": torch.rand(rows, generator=gen) * 3,
            "next_obs": torch.rand(rows, 3, generator=gen),
            "done": torch.rand(rows, generator=gen) < 0.5,
            "discount": torch.full((rows,), agent.gamma**3),
        }
    if weights is not None:
        batch["weights"] = weights
    return batch


def _losses(agent, batch):
    """Per-transition losses of the 1-step and n-step parts, without a learning step."""
    view = Population.of(agent)
    one = agent._transition_loss(view, batch, agent.gamma)[0].detach()
    n_step = batch.get("n_step")
    n = (
        None
        if n_step is None
        else agent._transition_loss(view, n_step, n_step["discount"])[0].detach()
    )
    return one, n


@pytest.mark.parametrize("combined", [False, True])
def test_priorities_are_the_n_step_or_combined_losses(combined):
    agent = _agent(combined_reward=combined)
    batch = _batch(agent, 16, n_step=True)
    one, n = _losses(copy.deepcopy(agent), batch)
    _, priorities = agent.learn_prioritized(batch)
    np.testing.assert_allclose(priorities.numpy(), (one + n if combined else n).numpy(), rtol=1e-5)


def test_a_one_step_batch_learns_from_the_one_step_loss_with_gamma():
    agent = _agent()
    batch = _batch(agent, 16)
    one, _ = _losses(copy.deepcopy(agent), batch)
    metrics, priorities = agent.learn_prioritized(batch)
    np.testing.assert_allclose(priorities.numpy(), one.numpy(), rtol=1e-5)
    assert metrics["loss"] == pytest.approx(float(one.mean()), rel=1e-5)
    assert set(metrics) == set(RainbowDQN.learn_metrics)


def test_importance_weights_scale_the_loss_not_the_priorities():
    agent = _agent()
    weights = torch.linspace(0.1, 1.0, 16)
    batch = _batch(agent, 16, weights=weights)
    one, _ = _losses(copy.deepcopy(agent), batch)
    metrics, priorities = agent.learn_prioritized(batch)
    assert metrics["loss"] == pytest.approx(float((one * weights).mean()), rel=1e-5)
    np.testing.assert_allclose(priorities.numpy(), one.numpy(), rtol=1e-5)


def test_the_target_moves_by_tau_and_both_networks_draw_fresh_noise():
    agent = _agent(tau=0.25)
    online = [p.detach().clone() for p in agent.actor.parameters()]
    target = [p.detach().clone() for p in agent.actor_target.parameters()]
    noise = agent.actor.head.value.out.weight_epsilon.clone()
    target_noise = agent.actor_target.head.value.out.weight_epsilon.clone()
    agent.learn(_batch(agent, 16))
    pairs = zip(target, agent.actor.parameters(), agent.actor_target.parameters(), strict=True)
    for tgt, now, new_tgt in pairs:
        torch.testing.assert_close(new_tgt, tgt + 0.25 * (now.detach() - tgt))
    assert not torch.equal(agent.actor.head.value.out.weight_epsilon, noise)
    assert not torch.equal(agent.actor_target.head.value.out.weight_epsilon, target_noise)
    assert any(not torch.equal(b, a) for b, a in zip(online, agent.actor.parameters(), strict=True))


def test_checkpoint_and_clone_keep_settings_weights_and_noise(tmp_path):
    agent = _agent(num_atoms=7, v_min=-2.0, v_max=5.0, noise_std=0.3, n_step=4, beta=0.6)
    agent.learn(_batch(agent, 16))
    agent.mutate_architecture("head.add_node", seed=1)
    path = tmp_path / "rainbow.pt"
    agent.save_checkpoint(path)
    for twin in (RainbowDQN.load(path), agent.clone()):
        assert twin.hyperparameters() == agent.hyperparameters()
        assert twin.actor.spec == agent.actor.spec and twin.actor.num_atoms == 7
        for mine, theirs in zip(
            agent.actor.state_dict().values(), twin.actor.state_dict().values(), strict=True
        ):
            torch.testing.assert_close(mine, theirs)  # noise sample and support included
        obs = np.random.default_rng(1).uniform(-1, 1, (32, 3)).astype(np.float32)
        np.testing.assert_array_equal(twin.explore(obs), agent.explore(obs))


# -- probe environments ----------------------------------------------------------------------
GAMMA = 0.5
#: Tolerance of the expected Q-values (sum of atoms x probabilities, mean weights).
#: Measured at 600 updates (seed 0, every replay kind): every value within 0.05 of its
#: answer (the truncated probe's 2, built up one bootstrap at a time, the slowest);
#: 0.1 is far below the 0.25 or more a discounting or termination mistake costs at
#: GAMMA 0.5.
TOLERANCE = 0.1
#: Atoms half a unit apart on [-1.5, 3.5]: every answer is an atom, and with few atoms
#: the distribution's mean reaches the answer in a few hundred updates.
PROBE_SETTINGS = {"num_atoms": 11, "v_min": -1.5, "v_max": 3.5}
REPLAYS = ["uniform", "prioritized", "n_step", "prioritized+n_step"]


def _buffers(kind, size=2000):
    memory = PrioritizedReplayBuffer(size, alpha=0.6) if "prioritized" in kind else None
    memory = memory or ReplayBuffer(size)
    n_step = NStepReplayBuffer(size, n_step=3, gamma=GAMMA) if "n_step" in kind else None
    return memory, n_step


def _rainbow_on_probe(make, kind, *, seed=0, updates=600, cls=RainbowDQN, **kwargs):
    """A Rainbow agent after ``updates`` learning steps on uniformly random transitions of
    the probe, stored and drawn by the off-policy loop's :class:`Replay` of ``kind``."""
    torch.manual_seed(seed)
    env = SyncVectorEnv([make] * 4, autoreset_mode=AutoresetMode.SAME_STEP)
    options = {
        "net_config": SMALL_NET,
        "lr": 1e-2,
        "tau": 0.1,
        "gamma": GAMMA,
        "batch_size": 32,
        "noise_std": 0.1,
        "seed": seed,
        **PROBE_SETTINGS,
        **kwargs,
    }
    agent = cls(env.single_observation_space, env.single_action_space, **options)
    memory, n_step = _buffers(kind)
    replay = Replay.of(memory, n_step, max_steps=updates)
    replay.check(agent)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(100):  # 400 transitions, each action about equally often
        action = rng.integers(0, env.single_action_space.n, 4)
        next_obs, reward, terminated, truncated, info = env.step(action)
        replay.add(obs, action, reward, with_final_obs(next_obs, info), terminated, truncated)
        obs = next_obs
    replay.end_turn()
    for step in range(updates):
        agent.steps = step  # beta anneals over the updates
        replay.learn(agent)
    return agent


def _expected_q(agent, env):
    agent.actor.eval()
    with torch.no_grad():
        return agent.actor(env.probe_observations()).numpy()


@pytest.mark.parametrize(
    "make",
    [ConstantRewardEnv, ObservationRewardEnv, DiscountedRewardEnv, TruncatedRewardEnv],
    ids=lambda make: make.__name__,
)
def test_expected_q_values_converge_to_the_probe_answers(make):
    env = make()
    agent = _rainbow_on_probe(make, "prioritized+n_step")
    np.testing.assert_allclose(
        _expected_q(agent, env), env.expected_q_values(GAMMA), atol=TOLERANCE
    )


@pytest.mark.parametrize("kind", REPLAYS[:-1])
@pytest.mark.parametrize(
    "make", [DiscountedRewardEnv, TruncatedRewardEnv], ids=lambda make: make.__name__
)
def test_every_replay_kind_converges_on_the_bootstrapping_probes(make, kind):
    # The probes where 1-step and n-step targets differ: a bootstrap, a time limit.
    env = make()
    agent = _rainbow_on_probe(make, kind)
    np.testing.assert_allclose(
        _expected_q(agent, env), env.expected_q_values(GAMMA), atol=TOLERANCE
    )


def test_the_greedy_action_of_the_action_probe_is_the_rewarded_one():
    make = lambda: ActionRewardEnv(n=3, rewarded_action=1)  # noqa: E731
    env = make()
    agent = _rainbow_on_probe(make, "prioritized+n_step")
    np.testing.assert_allclose(
        _expected_q(agent, env), env.expected_q_values(GAMMA), atol=TOLERANCE
    )
    assert agent.eval_action(env.probe_observations()).tolist() == [1]


def test_combined_losses_converge_too():
    env = DiscountedRewardEnv()
    agent = _rainbow_on_probe(DiscountedRewardEnv, "prioritized+n_step", combined_reward=True)
    np.testing.assert_allclose(
        _expected_q(agent, env), env.expected_q_values(GAMMA), atol=TOLERANCE
    )


class _GammaN(RainbowDQN):
    """A mis-wired n-step learner: every n-step bootstrap discounted by gamma^n."""

    def _transition_loss(self, view, batch, discount):
        if torch.is_tensor(discount):  # the n-step part (the 1-step one passes gamma)
            discount = torch.full_like(discount, self.gamma**3)
        return super()._transition_loss(view, batch, discount)


def test_the_truncated_probe_catches_n_step_returns_bootstrapped_with_gamma_n():
    # The probe can fail: discounting by gamma^n where the return was cut short at the
    # time limit (or the episode's end) bootstraps too little, and Q stays below 2.
    env = TruncatedRewardEnv()
    q = _expected_q(_rainbow_on_probe(TruncatedRewardEnv, "n_step", cls=_GammaN), env)
    assert np.abs(q - env.expected_q_values(GAMMA)).min() > 3 * TOLERANCE


# -- the replay of the off-policy loop -------------------------------------------------------
def test_beta_anneals_linearly_to_one_over_the_run():
    assert annealed_beta(0.4, 0, 1000) == 0.4
    assert annealed_beta(0.4, 500, 1000) == pytest.approx(0.7)
    assert annealed_beta(0.4, 1000, 1000) == annealed_beta(0.4, 5000, 1000) == 1.0


def test_prioritised_replay_samples_at_the_annealed_beta_and_updates_priorities():
    agent = _agent(beta=0.2, prior_eps=1e-3, batch_size=8)
    memory = PrioritizedReplayBuffer(100, alpha=1.0)
    replay = Replay.of(memory, None, max_steps=100)
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
        replay.add(obs, rng.integers(0, 3, 4), np.ones(4), obs, np.zeros(4, bool), None)
    agent.steps = 50
    torch.manual_seed(0)
    drawn = memory.sample(8, 0.6)  # what the replay will draw: same generator state
    torch.manual_seed(0)
    twin = copy.deepcopy(agent)
    metrics = replay.learn(agent)
    assert metrics["beta"] == pytest.approx(0.6)  # 0.2 + 0.8 * 50 / 100
    _, losses = twin.learn_prioritized(drawn)
    slots = drawn["indices"].numpy()
    np.testing.assert_allclose(memory.priorities()[slots], losses.numpy() + 1e-3, rtol=1e-4)


def _n_step_probe_run(env):
    """A small Rainbow agent on ``env`` with a replay and a 3-step buffer to fill."""
    agent = RainbowDQN(
        env.single_observation_space,
        env.single_action_space,
        net_config=SMALL_NET,
        gamma=GAMMA,
        batch_size=4,
        v_min=0.0,
        v_max=2.0,
        seed=0,
    )
    return agent, ReplayBuffer(100), NStepReplayBuffer(100, n_step=3, gamma=GAMMA)


def test_the_loop_fills_the_n_step_buffer_and_flushes_it_at_the_end_of_a_turn():
    # DiscountedRewardEnv: obs 0 (reward 0) then obs 1 (reward 1, terminal): from obs 0 the
    # 3-step return is gamma * 1, cut at the termination after 2 steps.
    env = SyncVectorEnv([DiscountedRewardEnv] * 2, autoreset_mode=AutoresetMode.SAME_STEP)
    agent, memory, n_step = _n_step_probe_run(env)
    train_off_policy(
        env, "probe", "RainbowDQN", [agent], memory, n_step_memory=n_step,
        max_steps=11, evo_steps=11, eval_steps=5, verbose=False,
    )  # fmt: skip
    assert n_step.pending == 0 and len(n_step) == len(memory) == 12  # 6 vector steps
    rows = n_step.state_dict()["buffer"]["data"]
    one = memory.state_dict()["data"]
    torch.testing.assert_close(rows["obs"], one["obs"])  # same slots, same (obs, action)
    first = rows["obs"][:, 0] == 0
    np.testing.assert_allclose(rows["reward"][first].numpy(), GAMMA)
    np.testing.assert_allclose(rows["discount"][first].numpy(), GAMMA**2)
    np.testing.assert_allclose(rows["reward"][~first].numpy(), 1.0)
    np.testing.assert_allclose(rows["discount"][~first].numpy(), GAMMA)
    assert rows["done"].all()
    assert np.all(rows["next_obs"][:, 0].numpy() == 1.0)


def test_the_loop_cuts_n_step_returns_at_a_time_limit_and_at_the_end_of_a_turn():
    # TruncatedRewardEnv(max_steps=4): reward 1 a step, cut after 4 steps, never ended by
    # the task; the turn ends 2 steps into the second episode (flushed as truncated).
    # Per env, in time order (gamma 0.5, n 3): 1 + 1/2 + 1/4 twice, then 1 + 1/2, 1 (the
    # time limit), then 1 + 1/2, 1 (the turn's end); never done, discount gamma^k.
    env = SyncVectorEnv(
        [lambda: TruncatedRewardEnv(max_steps=4)] * 2, autoreset_mode=AutoresetMode.SAME_STEP
    )
    agent, memory, n_step = _n_step_probe_run(env)
    train_off_policy(
        env, "probe", "RainbowDQN", [agent], memory, n_step_memory=n_step,
        max_steps=12, evo_steps=12, eval_steps=5, verbose=False,
    )  # fmt: skip
    rows = n_step.state_dict()["buffer"]["data"]  # slot order: time, then env
    per_env = lambda t: t.reshape(6, 2).T.numpy()  # noqa: E731
    np.testing.assert_allclose(per_env(rows["reward"]), [[1.75, 1.75, 1.5, 1, 1.5, 1]] * 2)
    discount = [0.125, 0.125, 0.25, 0.5, 0.25, 0.5]
    np.testing.assert_allclose(per_env(rows["discount"]), [discount] * 2)
    assert not rows["done"].any()
    assert n_step.pending == 0 and len(memory) == 12


def test_the_loop_refuses_buffers_the_agent_cannot_learn_from():
    env = SyncVectorEnv([ConstantRewardEnv], autoreset_mode=AutoresetMode.SAME_STEP)
    dqn = DQN(env.single_observation_space, env.single_action_space, net_config=SMALL_NET)
    run = {"max_steps": 10, "evo_steps": 10, "verbose": False}
    with pytest.raises(ValueError, match="memory: prioritised replay needs an agent"):
        train_off_policy(env, "probe", "DQN", [dqn], PrioritizedReplayBuffer(10), **run)
    with pytest.raises(ValueError, match="n_step_memory: DQN learns from 1-step transitions"):
        train_off_policy(
            env, "probe", "DQN", [dqn], ReplayBuffer(10),
            n_step_memory=NStepReplayBuffer(10, gamma=dqn.gamma), **run,
        )  # fmt: skip
    with pytest.raises(ValueError, match="need the same max_size"):
        Replay.of(ReplayBuffer(10), NStepReplayBuffer(20))
    with pytest.raises(TypeError, match="pass it as n_step_memory"):
        Replay.of(NStepReplayBuffer(10))


# -- the trainer -----------------------------------------------------------------------------
def _document(**replay_buffer):
    return {
        "algorithm": {"name": "RainbowDQN", "batch_size": 16, "v_min": 0.0, "v_max": 50.0},
        "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
        "network": {
            "arch": "mlp",
            "latent_dim": 16,
            "encoder_config": {"hidden_size": [16]},
            "head_config": {"hidden_size": [16]},
        },
        "training": {"max_steps": 100, "evo_steps": 100, "eval_steps": 10, "seed": 0},
        "replay_buffer": {"max_size": 500, **replay_buffer},
    }


@pytest.mark.parametrize(
    ("algorithm", "replay_buffer", "message"),
    [
        ("DQN", {"per_buffer": True}, "replay_buffer.per_buffer: prioritised replay serves"),
        ("DQN", {"n_step_buffer": True}, "replay_buffer.n_step_buffer: DQN learns from 1-step"),
        (
            "RainbowDQN",
            {"n_step_buffer": True, "n_step_buffer_args": {"n_step": 5}},
            "replay_buffer.n_step_buffer_args.n_step: 5, but algorithm.n_step is 3",
        ),
    ],
)
def test_the_trainer_refuses_replay_combinations_naming_the_key(algorithm, replay_buffer, message):
    document = _document(**replay_buffer)
    document["algorithm"] = {"name": algorithm, "batch_size": 16}
    with pytest.raises(TrainerError, match=message):
        LocalTrainer.from_manifest(document).train(verbose=False)


@pytest.mark.parametrize(
    "replay_buffer",
    [
        {},
        {"per_buffer": True},
        {"n_step_buffer": True},
        {"per_buffer": True, "n_step_buffer": True},
    ],
    ids=["uniform", "prioritized", "n_step", "prioritized+n_step"],
)
def test_the_trainer_builds_the_buffers_the_section_selects(replay_buffer):
    trainer = LocalTrainer.from_manifest(_document(**replay_buffer))
    memory, n_step = trainer.family.make_memory(trainer.context)
    assert isinstance(memory, PrioritizedReplayBuffer) == bool(replay_buffer.get("per_buffer"))
    assert (n_step is not None) == bool(replay_buffer.get("n_step_buffer"))
    population, fitnesses = trainer.train(verbose=False)
    assert population[0].steps == 100 and np.isfinite(fitnesses[0])
    assert "loss" in trainer.state.history[-1]["agents"][0]["metrics"]


# -- through `agilerl train` -----------------------------------------------------------------
CONFIG = ROOT / "configs/rainbow_dqn.yaml"
SMALL = [
    "--set", "training.pop_size=2",
    "--set", "training.evo_steps=200",
    "--set", "training.eval_steps=30",
    "--set", "training.target_score=null",
    "--set", "environment.num_envs=2",
    "--set", "replay_buffer.max_size=2000",
    "--set", "algorithm.batch_size=32",
]  # fmt: skip


def test_the_shipped_config_trains_a_few_hundred_steps(tmp_path):
    out = tmp_path / "run"
    assert (
        main(["train", str(CONFIG), *SMALL, "--set", "training.max_steps=400", "--out", str(out)])
        == 0
    )
    history = json.loads((out / "history.json").read_text())
    assert history[-1]["steps"] == 400
    metrics = history[-1]["agents"][0]["metrics"]
    assert {"loss", "q_mean", "beta"} <= set(metrics)
    best = RainbowDQN.load(out / "best_agent.pt")
    assert best.hyperparameters()["v_max"] == 100.0


def _fitness(out):
    history = json.loads((out / "history.json").read_text())
    return [[agent["fitness"] for agent in record["agents"]] for record in history]


@pytest.mark.slow
def test_a_killed_rainbow_run_resumes_with_the_same_priorities_and_history(tmp_path):
    """Killed after its first checkpoint and resumed, the run's fitness history equals the
    uninterrupted run's: the prioritised buffer (its priorities included), the n-step
    buffer, the agents' noise and every generator continue as they stood."""
    budget = ["--set", "training.max_steps=1000"]
    whole = tmp_path / "whole"
    assert main(["train", str(CONFIG), *SMALL, *budget, "--out", str(whole)]) == 0
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "agilerl.cli", "train", str(CONFIG), *SMALL, *budget,
        "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    checkpoint = out / "checkpoint.pt"
    kill_at_first_checkpoint(command, checkpoint, env)
    saved = load_run(checkpoint)
    assert set(saved["memory"]) >= {"priorities", "max_priority"}  # a prioritised buffer
    assert saved["n_step_memory"]["n_step"] == 3
    resumed = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming from" in resumed.stderr
    assert _fitness(out) == _fitness(whole)
    assert len(_fitness(out)) == 5


def test_a_checkpoint_without_its_n_step_buffer_is_refused(tmp_path, capsys):
    out = tmp_path / "run"
    small = [*SMALL, "--set", "training.max_steps=200", "--out", str(out)]
    assert main(["train", str(CONFIG), *small]) == 0
    data = load_run(out / "checkpoint.pt")
    del data["n_step_memory"]  # as a run without one writes it
    checkpoints.save(data, out / "checkpoint.pt")
    capsys.readouterr()
    assert main(["train", str(CONFIG), *small, "--resume"]) == 1
    err = capsys.readouterr().err
    assert "n_step_memory: the checkpoint holds none, this run needs one" in err
    assert "Traceback" not in err


# -- learning outcome ------------------------------------------------------------------------
#: Tuned on this machine (seed 0: evaluation fitness above 400 within 16,000 steps per
#: agent, about 30 s of CPU); the budget leaves room, the target is the issue's.
RAINBOW_LEARNS = {
    "algorithm": {
        "name": "RainbowDQN",
        "batch_size": 128,
        "lr": 1e-3,
        "learn_step": 8,
        "tau": 0.05,
        "v_min": 0.0,
        "v_max": 100.0,
    },
    "environment": {"name": "CartPole-v1", "num_envs": 8, "sync": True},
    "network": {
        "arch": "mlp",
        "latent_dim": 64,
        "encoder_config": {"hidden_size": [64]},
        "head_config": {"hidden_size": [64]},
    },
    "training": {
        "max_steps": 30_000,
        "evo_steps": 2_000,
        "pop_size": 1,
        "target_score": 400.0,
        "seed": 0,
    },
    "replay_buffer": {
        "max_size": 20_000,
        "per_buffer": True,
        "per_buffer_args": {"alpha": 0.6},
        "n_step_buffer": True,
    },
}


@pytest.mark.slow
def test_rainbow_learns_cartpole_within_a_small_budget():
    trainer = LocalTrainer.from_manifest(copy.deepcopy(RAINBOW_LEARNS))
    _, fitnesses = trainer.train(verbose=False)
    assert max(fitnesses) >= 400.0, trainer.state.history[-1]
    assert trainer.state.finished == "target_score"
    assert trainer.state.steps < RAINBOW_LEARNS["training"]["max_steps"]
