"""Probe environments (agilerl.testing.probe_envs): each is a valid, seeded Gymnasium env
whose published answers agree with its own dynamics, and today's value learners converge
to those answers: DQN's Q-values on the discrete probes, PPO's critic on the probes whose
reward ignores the action (with Discrete and Box actions) and its policy on the action
probes. Two siblings show that a probe fails a mis-wired learner."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from agilerl.algorithms import DQN, PPO
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.single_agent.off_policy import with_final_obs
from agilerl.testing.probe_envs import (
    PROBES,
    ActionRewardEnv,
    ConstantRewardEnv,
    ContinuousActionEnv,
    DiscountedRewardEnv,
    ObservationRewardEnv,
    TruncatedRewardEnv,
)

#: Every probe in each of its action-space variants.
VARIANTS = {
    "constant_reward": ConstantRewardEnv,
    "constant_reward-box": lambda: ConstantRewardEnv(continuous=True),
    "observation_reward": ObservationRewardEnv,
    "observation_reward-box": lambda: ObservationRewardEnv(continuous=True),
    "discounted_reward": DiscountedRewardEnv,
    "discounted_reward-box": lambda: DiscountedRewardEnv(continuous=True),
    "action_reward": ActionRewardEnv,
    "action_reward-3": lambda: ActionRewardEnv(n=3, rewarded_action=0),
    "continuous_action": ContinuousActionEnv,
    "continuous_action-2d": lambda: ContinuousActionEnv(target=[0.5, -0.25], dim=2),
    "truncated_reward": TruncatedRewardEnv,
    "truncated_reward-box": lambda: TruncatedRewardEnv(continuous=True, max_steps=3),
}
#: The probes whose reward ignores the action: their values hold for any policy.
ACTION_FREE = ("constant_reward", "observation_reward", "discounted_reward", "truncated_reward")
#: A discount far from 1: ``V(0) = gamma`` of the discounted probe is then far from the
#: undiscounted 1, and a learner that bootstraps past a termination finds 1 / (1 - gamma)
#: = 2 instead of 1 on the constant probe; both mistakes stand out of any tolerance below.
GAMMA = 0.5


def _actions_of(env):
    """A batch of actions to evaluate ``Q`` on: all of a Discrete space, a few of a Box."""
    if isinstance(env.action_space, spaces.Discrete):
        return np.arange(env.action_space.n)
    if isinstance(env, ContinuousActionEnv):
        return np.stack([env.target, np.zeros_like(env.target), -np.ones_like(env.target)])
    return np.array([[-1.0], [0.0], [1.0]], dtype=np.float32)


# -- the environments ----------------------------------------------------------------------
def test_the_registry_names_every_probe_once():
    assert set(PROBES.values()) == {
        ConstantRewardEnv,
        ObservationRewardEnv,
        DiscountedRewardEnv,
        ActionRewardEnv,
        ContinuousActionEnv,
        TruncatedRewardEnv,
    }
    assert {name.split("-")[0] for name in VARIANTS} == set(PROBES)
    assert all(cls.isolates for cls in PROBES.values())


@pytest.mark.parametrize("name", VARIANTS)
def test_each_probe_passes_gymnasiums_env_checker(name):
    check_env(VARIANTS[name](), skip_render_check=True)


@pytest.mark.parametrize("name", VARIANTS)
def test_published_answers_satisfy_the_bellman_equation_of_the_dynamics(name):
    """``Q(s, a) = r + gamma * V(s')`` (``V(s') = 0`` at a termination, bootstrapped at a
    truncation) on every transition of a few seeded episodes per action: the answers the
    learners are held to are those of the environment's own dynamics."""
    env = VARIANTS[name]()
    values = dict(
        zip(map(float, env.probe_observations()[:, 0]), env.expected_values(GAMMA), strict=True)
    )
    actions = _actions_of(env)
    checked = 0
    for seed in range(4):
        for action in actions:
            obs, _ = env.reset(seed=seed)
            ended = False
            while not ended:
                assert float(obs[0]) in values  # every reachable observation has an answer
                q = env.expected_q_values(GAMMA, actions)[list(values).index(float(obs[0]))]
                index = next(i for i, a in enumerate(actions) if np.array_equal(a, action))
                next_obs, reward, terminated, truncated, _ = env.step(action)
                bootstrap = 0.0 if terminated else values[float(next_obs[0])]
                assert q[index] == pytest.approx(reward + GAMMA * bootstrap)
                obs, ended, checked = next_obs, terminated or truncated, checked + 1
    assert checked >= 4 * len(actions)


@pytest.mark.parametrize(
    ("env", "values"),
    [
        (ConstantRewardEnv(), [1.0]),
        (ObservationRewardEnv(), [-1.0, 1.0]),
        (DiscountedRewardEnv(), [GAMMA, 1.0]),
        (ActionRewardEnv(n=3, rewarded_action=2), [1.0]),
        (ContinuousActionEnv(target=0.25), [0.0]),
        (TruncatedRewardEnv(), [1.0 / (1.0 - GAMMA)]),
    ],
)
def test_expected_values_are_the_documented_ones(env, values):
    np.testing.assert_allclose(env.expected_values(GAMMA), values)


def test_expected_q_values_of_the_action_dependent_probes():
    np.testing.assert_array_equal(
        ActionRewardEnv(n=3, rewarded_action=2).expected_q_values(GAMMA), [[0.0, 0.0, 1.0]]
    )
    box = ContinuousActionEnv(target=[0.5, -0.5], dim=2)
    q = box.expected_q_values(GAMMA, [[0.5, -0.5], [0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(q, [[0.0, -0.5, -2.5]])


def test_observation_probe_resets_follow_the_seed():
    def first_observations(seed):
        env = ObservationRewardEnv()
        env.reset(seed=seed)
        return [float(env.reset()[0][0]) for _ in range(40)]

    assert first_observations(3) == first_observations(3)
    assert first_observations(3) != first_observations(4)
    assert set(first_observations(3)) == {-1.0, 1.0}


def test_bad_probe_arguments_are_refused():
    with pytest.raises(ValueError, match="needs the actions"):
        ContinuousActionEnv().expected_q_values(GAMMA)
    with pytest.raises(ValueError, match=r"rewarded_action must lie in \[0, 2\)"):
        ActionRewardEnv(n=2, rewarded_action=2)
    with pytest.raises(ValueError, match="target must lie in"):
        ContinuousActionEnv(target=2.0)
    with pytest.raises(ValueError, match="gamma in"):
        TruncatedRewardEnv().expected_values(1.0)
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        TruncatedRewardEnv(max_steps=0)


def test_probe_module_imports_neither_torch_nor_the_engine():
    code = (
        "import sys, json; import agilerl.testing.probe_envs; "
        "print(json.dumps([m for m in ('torch', 'agilerl.algorithms') if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


# -- DQN: Q-values ---------------------------------------------------------------------------
DQN_NET = {
    "encoder_config": {"arch": "mlp", "hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
    "latent_dim": 16,
}
#: Tolerance of the converged Q-values. Measured at 400 updates (seeds 0-2, lr 1e-2,
#: tau 0.1) on probes 1-4: every Q-value within 3e-4 of its answer, and within 0.1 already by about 150
#: updates; 0.05 is far from both that noise and any of the mistakes GAMMA exposes (>= 0.25).
DQN_TOLERANCE = 0.05


def _vector_env(make, n=4):
    return SyncVectorEnv([make] * n, autoreset_mode=AutoresetMode.SAME_STEP)


def _dqn_on_probe(make, *, seed=0, updates=400, store_done=True, **kwargs):
    """A DQN trained on ``updates`` batches of uniformly random transitions of the probe:
    the replay buffer is filled as the off-policy loop fills it (the episode's true last
    observation as ``next_obs``, ``done`` = terminated only)."""
    torch.manual_seed(seed)
    env = _vector_env(make)
    options = {"net_config": DQN_NET, "lr": 1e-2, "tau": 0.1, "gamma": GAMMA, "batch_size": 64}
    agent = DQN(
        env.single_observation_space, env.single_action_space, seed=seed, **options, **kwargs
    )
    memory = ReplayBuffer(1000)
    obs, info = env.reset(seed=seed)
    for _ in range(64):  # 256 transitions, each action about equally often
        action = agent.get_action(obs, epsilon=1.0)
        next_obs, reward, terminated, truncated, info = env.step(action)
        done = terminated if store_done else np.zeros_like(terminated)
        memory.add(obs, action, reward, with_final_obs(next_obs, info), done)
        obs = next_obs
    for _ in range(updates):
        agent.learn(memory.sample(agent.batch_size))
    return agent


def _q_values(agent, env):
    with torch.no_grad():
        return agent.actor(env.probe_observations()).numpy()


#: Updates per probe. The truncated probe's 2 = 1 + gamma + gamma^2 + ... is built up one
#: bootstrap through the slowly moving target network at a time: at 400 updates it stands
#: at 1.94 (seeds 0-2), at 800 within 2e-4 of 2, like the other probes at 400.
DQN_UPDATES = {TruncatedRewardEnv: 800}


@pytest.mark.parametrize(
    "make",
    [
        ConstantRewardEnv,
        ObservationRewardEnv,
        DiscountedRewardEnv,
        ActionRewardEnv,
        TruncatedRewardEnv,
    ],
    ids=lambda make: make.__name__,
)
def test_dqn_q_values_converge_to_the_probe_answers(make):
    env = make()
    agent = _dqn_on_probe(make, updates=DQN_UPDATES.get(make, 400))
    np.testing.assert_allclose(
        _q_values(agent, env), env.expected_q_values(GAMMA), atol=DQN_TOLERANCE
    )


def test_dqn_greedy_action_is_the_rewarded_one():
    make = lambda: ActionRewardEnv(n=3, rewarded_action=2)  # noqa: E731
    env = make()
    agent = _dqn_on_probe(make)
    np.testing.assert_allclose(
        _q_values(agent, env), env.expected_q_values(GAMMA), atol=DQN_TOLERANCE
    )
    assert agent.eval_action(env.probe_observations()).tolist() == [2]


def test_double_dqn_discounts_like_dqn():
    env = DiscountedRewardEnv()
    agent = _dqn_on_probe(DiscountedRewardEnv, double=True, seed=1)
    np.testing.assert_allclose(
        _q_values(agent, env), env.expected_q_values(GAMMA), atol=DQN_TOLERANCE
    )


def test_the_constant_probe_catches_a_learner_that_bootstraps_past_the_end():
    # The probe can fail: transitions stored without their termination make every episode
    # endless, and Q converges to 1 / (1 - gamma) = 2, not 1.
    env = ConstantRewardEnv()
    q = _q_values(_dqn_on_probe(ConstantRewardEnv, store_done=False, updates=800), env)
    assert np.abs(q - env.expected_q_values(GAMMA)).min() > 10 * DQN_TOLERANCE
    np.testing.assert_allclose(q, 1.0 / (1.0 - GAMMA), atol=0.1)


# -- PPO: the critic ---------------------------------------------------------------------------
PPO_NET = {
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
    "latent_dim": 16,
}
#: Tolerance of the converged values. Measured at 50 rollouts (seeds 0-1, both action
#: spaces): every value within 0.014 of its answer (the shared encoder also follows the
#: policy loss, so the critic keeps moving a little); 0.05 leaves room for that and is far
#: from the 0.25 or more that a discounting or termination mistake costs at GAMMA 0.5.
PPO_TOLERANCE = 0.05


def _ppo_on_probe(make, *, seed=0, rollouts=50):
    """A PPO agent after ``rollouts`` rollouts of 64 steps in 4 environments of the probe,
    each learnt from with 4 epochs of minibatches of 32."""
    torch.manual_seed(seed)
    env = _vector_env(make)
    agent = PPO(
        env.single_observation_space,
        env.single_action_space,
        net_config=PPO_NET,
        lr=1e-2,
        gamma=GAMMA,
        learn_step=64,
        batch_size=32,
        num_envs=4,
        update_epochs=4,
        seed=seed,
    )
    obs, info = env.reset(seed=seed)
    for _ in range(rollouts):
        obs, info, _ = agent.collect_rollouts(env, obs, info)
        agent.learn()
    return agent


def _ppo_values_on_probe(make, **kwargs):
    """The critic's values of the probe observations after :func:`_ppo_on_probe`."""
    agent = _ppo_on_probe(make, **kwargs)
    with torch.no_grad():
        return agent.critic(make().unwrapped.probe_observations()).numpy().reshape(-1)


@pytest.mark.parametrize("continuous", [False, True], ids=["discrete", "box"])
@pytest.mark.parametrize("name", ACTION_FREE)
def test_ppo_values_converge_to_the_probe_answers(name, continuous):
    make = lambda: PROBES[name](continuous=continuous)  # noqa: E731
    np.testing.assert_allclose(
        _ppo_values_on_probe(make), make().expected_values(GAMMA), atol=PPO_TOLERANCE
    )


class _TruncationAsTermination(gym.Wrapper):
    """A mis-wired environment: it reports its time limit as the end of the task."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated or truncated, False, info


def test_the_truncated_probe_catches_a_time_limit_taken_for_the_end():
    # The probe can fail: with the cut after two steps reported as a termination, the
    # critic learns about 1.25 (the mean of the discounted returns left, 1.5 and 1), not 2.
    make = lambda: _TruncationAsTermination(TruncatedRewardEnv())  # noqa: E731
    values = _ppo_values_on_probe(make)
    expected = TruncatedRewardEnv().expected_values(GAMMA)
    assert np.abs(values - expected).min() > 10 * PPO_TOLERANCE
    np.testing.assert_allclose(values, 1.25, atol=0.1)


@pytest.mark.parametrize(
    ("make", "optimum"),
    [
        (lambda: ActionRewardEnv(n=3, rewarded_action=2), [2]),
        (lambda: ContinuousActionEnv(target=0.5), [[0.5]]),
    ],
    ids=["discrete", "box"],
)
def test_ppo_policy_finds_the_optimum_of_the_action_probes(make, optimum):
    # Beyond the critic: the policy's mode becomes the optimal action, and as the policy
    # sharpens its value approaches the optimal one. Measured at 40 rollouts (seeds 0-1):
    # the Box mean within 0.003 of the target (its std down to 0.04), the values within
    # 0.02 of V* = 1 (discrete, entropy bonus keeps a little exploration) and 0 (Box).
    agent = _ppo_on_probe(make, rollouts=40)
    env = make()
    observations = env.probe_observations()
    np.testing.assert_allclose(agent.eval_action(observations), optimum, atol=0.02)
    with torch.no_grad():
        values = agent.critic(observations).numpy().reshape(-1)
    np.testing.assert_allclose(values, env.expected_values(GAMMA), atol=PPO_TOLERANCE)
