"""Vectorised environments from GymEnvSpec: sync/async, entry points, wrappers, errors."""

import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from agilerl.families.single_agent.envs import EnvironmentSpecError, make_vector_env
from agilerl.models.env import GymEnvSpec


def test_sync_and_async_from_the_spec_with_same_step_autoreset():
    sync = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=3, sync=True))
    assert isinstance(sync, SyncVectorEnv) and sync.num_envs == 3
    obs, _ = sync.reset(seed=0)
    ended = False
    for _ in range(300):  # random play ends episodes quickly
        obs, _, term, trunc, info = sync.step(sync.action_space.sample())
        if np.any(term | trunc):
            ended = True
            assert "final_obs" in info  # same-step autoreset: last obs kept aside
            break
    assert ended
    sync.close()
    async_env = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2))
    try:
        assert isinstance(async_env, AsyncVectorEnv)
        assert async_env.reset(seed=0)[0].shape == (2, 4)
    finally:
        async_env.close()


def test_unknown_name_names_the_field_and_a_close_match():
    with pytest.raises(
        EnvironmentSpecError, match=r"environment.name: 'CartPol-v1' .*'CartPole-v1'"
    ):
        make_vector_env(GymEnvSpec(name="CartPol-v1", sync=True))


def test_entrypoint_file_config_and_wrappers(tmp_path):
    (tmp_path / "envs.py").write_text(
        "import gymnasium as gym\n"
        "def make(length):\n"
        "    return gym.wrappers.TimeLimit(gym.make('CartPole-v1').unwrapped, length)\n"
    )
    spec = GymEnvSpec(
        name="short-cartpole",
        entrypoint="envs.py:make",
        path=str(tmp_path),
        config={"length": 3},
        wrappers=["gymnasium.wrappers.RecordEpisodeStatistics"],
        num_envs=2,
        sync=True,
    )
    env = make_vector_env(spec)
    env.reset(seed=0)
    for _ in range(3):
        _, _, term, trunc, info = env.step(np.zeros(2, dtype=np.int64))
    assert np.all(term | trunc)  # the config's time limit of 3 applied
    assert "episode" in info["final_info"]  # the wrapper applied
    env.close()


def test_bad_entrypoint_and_wrapper_errors_name_the_field(tmp_path):
    with pytest.raises(EnvironmentSpecError, match="environment.entrypoint: no file"):
        make_vector_env(GymEnvSpec(name="x", entrypoint="missing.py:make", path=str(tmp_path)))
    with pytest.raises(EnvironmentSpecError, match=r"environment.wrappers.0: .*no attribute"):
        make_vector_env(
            GymEnvSpec(name="CartPole-v1", wrappers=["gymnasium.wrappers.Nope"], sync=True)
        )
    with pytest.raises(EnvironmentSpecError, match="environment.config"):
        make_vector_env(GymEnvSpec(name="CartPole-v1", config={"bogus": 1}, sync=True))
