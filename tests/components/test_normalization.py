"""PPO's running normalisation of observations and rewards: the statistics, when they
move (after a rollout's update, so acting and learning see one normalisation), what is
scaled and what stays in the environment's units, and that they travel with the agent
(saves, clones, predict, evaluation) and make a badly scaled task learnable."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from agilerl.algorithms.ppo import PPO
from agilerl.cohorts.learners import cohort_key
from agilerl.components.normalization import RunningMeanStd
from agilerl.files.checkpoints import CheckpointError
from agilerl.testing.scaled import ScaledTargetEnv

NET = {
    "latent_dim": 32,
    "encoder_config": {"hidden_size": [32]},
    "head_config": {"hidden_size": [32]},
}
BOTH = {"observation": True, "reward": True}


def envs(n=8):
    return gym.vector.SyncVectorEnv(
        [ScaledTargetEnv for _ in range(n)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP
    )


def agent(normalize=BOTH, seed=0, **kwargs):
    torch.manual_seed(seed)
    env = envs()
    kwargs = {"learn_step": 256, "batch_size": 64, "lr": 3e-3, "ent_coef": 0.0, **kwargs}
    made = PPO(env.single_observation_space, env.single_action_space, normalize=normalize,
               seed=seed, net_config=NET, **kwargs)  # fmt: skip
    return made, env


def test_running_statistics_merge_batches_as_one():
    rng = np.random.default_rng(0)
    rows = rng.normal(3.0, 2.0, (500, 3)) * np.array([1.0, 10.0, 0.1])
    stats = RunningMeanStd((3,))
    for part in np.array_split(rows, 7):
        stats.update(part)
    # the initial mean 0 and variance 1 weigh 1e-4 rows: within 1e-4 of the rows' own
    np.testing.assert_allclose(stats.mean, rows.mean(0), rtol=1e-4)
    np.testing.assert_allclose(stats.var, rows.var(0), rtol=1e-4)
    assert stats.count == pytest.approx(500, abs=1e-3)


def test_a_rollout_is_normalised_alike_when_acted_on_and_learnt_from_then_taken_in():
    ppo, env = agent()
    obs, info = env.reset(seed=0)
    before = copy.deepcopy(ppo.normalization.state_dict())
    ppo.collect_rollouts(env, obs, info)
    assert ppo.normalization.state_dict() == before  # frozen while collecting
    buffer = ppo.rollout_buffer
    stored = buffer.samples()
    with torch.no_grad():  # the policy now, on what it acted on: the stored log-probs
        dist, _, _ = ppo._forward_x(ppo.actor, ppo.critic, ppo._preprocess(stored.obs), None, None)
        torch.testing.assert_close(dist.log_prob(stored.actions), stored.log_probs)
    raw = stored.obs.reshape(-1, 1).double().numpy()
    ppo.learn()
    stats = ppo.normalization.observations
    np.testing.assert_allclose(stats.mean, raw.mean(0), rtol=1e-5)
    np.testing.assert_allclose(stats.var, raw.var(0), rtol=1e-3)


def test_rewards_are_scaled_for_learning_and_returns_stay_in_the_environments_units():
    ppo, env = agent(learn_step=64)
    obs, info = env.reset(seed=1)
    obs, info, returns = ppo.collect_rollouts(env, obs, info)
    ppo.learn()  # the returns' spread is taken in: the next rollout is scaled by it
    obs, info, returns = ppo.collect_rollouts(env, obs, info)
    learnt = ppo.rollout_buffer.rewards.reshape(-1).numpy()
    spread = np.sqrt(ppo.normalization.returns.var + 1e-8)
    assert min(returns) < -1.0  # -100 x squared errors: the environment's units
    np.testing.assert_allclose(np.sort(learnt), np.sort(np.asarray(returns) / spread), rtol=1e-5)


def test_statistics_are_saved_with_the_agent_cloned_and_applied_by_predict(tmp_path):
    ppo, env = agent()
    obs, info = env.reset(seed=2)
    for _ in range(2):
        obs, info, _ = ppo.collect_rollouts(env, obs, info)
        ppo.learn()
    ppo.save_checkpoint(tmp_path / "agent.pt")
    loaded = PPO.load(tmp_path / "agent.pt")
    twin = ppo.clone(index=3)
    probe = np.array([[300.0], [500.0], [650.0]], np.float32)
    for other in (loaded, twin):
        assert other.normalization.state_dict().keys() == ppo.normalization.state_dict().keys()
        np.testing.assert_array_equal(
            other.normalization.observations.mean, ppo.normalization.observations.mean
        )
        np.testing.assert_array_equal(
            other.predict(probe, deterministic=True)[0], ppo.predict(probe, deterministic=True)[0]
        )
    # a saved agent evaluated on a fresh environment scores what it scored
    assert loaded.test(envs(), loop=2, seed=50) == ppo.test(envs(), loop=2, seed=50)
    # predict normalises: without the statistics the same weights act otherwise
    loaded.normalization.observations = RunningMeanStd((1,))
    loaded.normalization._frozen = None
    assert not np.allclose(
        loaded.predict(probe, deterministic=True)[0], ppo.predict(probe, deterministic=True)[0]
    )


def test_a_saved_agent_whose_settings_disagree_with_its_statistics_is_refused(tmp_path):
    ppo, _ = agent()
    state = ppo.state_dict()
    state["extra"]["normalization"]["reward"] = None
    with pytest.raises(CheckpointError, match=r"extra\.normalization\.reward"):
        PPO.from_state_dict(state)


def test_observation_statistics_need_a_vector_observation_space():
    lake = gym.make("FrozenLake-v1")
    with pytest.raises(ValueError, match=r"^normalize\.observation: .*Discrete"):
        PPO(lake.observation_space, lake.action_space, normalize={"observation": True})
    PPO(lake.observation_space, lake.action_space, normalize={"observation": False})


def test_normalising_agents_train_alone():
    plain, _ = agent(normalize=None)
    normalising, _ = agent()
    assert cohort_key(plain) is not None and cohort_key(normalising) is None


def mean_return(normalize):
    ppo, env = agent(normalize=normalize)
    obs, info = env.reset(seed=0)
    for _ in range(24):  # 6,144 steps
        obs, info, _ = ppo.collect_rollouts(env, obs, info)
        ppo.learn()
    return ppo.test(env, loop=4, seed=100)


def test_a_badly_scaled_task_is_learnt_with_normalisation_and_not_without():
    """Observations 500 +- 200 and rewards -100 x squared error: normalised, PPO finds the
    target (seed 0: -0.2, the optimum 0); raw, it stays worse than always acting 0
    (-33): -42."""
    assert mean_return(BOTH) > -2.0
    assert mean_return(None) < -20.0
