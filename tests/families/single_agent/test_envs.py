"""Vectorised environments from GymEnvSpec: sync/async, entry points, wrappers, errors
(native ones: test_native.py)."""

import numpy as np
import pytest
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

from agilerl.families.environments import EnvironmentCallError, EnvironmentSpecError
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.guards.time_limit import ENV_VAR
from agilerl.guards.user_code import UserCodeError
from agilerl.models.env import GymEnvSpec


def test_sync_and_async_from_the_spec_with_same_step_autoreset():
    sync = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=3, vectorize="sync"))
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
    async_env = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2, vectorize="async"))
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


# --- the environment's own code: failures and hangs ---------------------------------------

HOSTILE_ENVS = """
import time
import gymnasium as gym

class Hostile(gym.Wrapper):
    def __init__(self, mode):
        super().__init__(gym.make("CartPole-v1"))
        self.mode = mode

    def reset(self, **kwargs):
        if self.mode == "reset hangs":
            time.sleep(600)
        return self.env.reset(**kwargs)

    def step(self, action):
        if self.mode == "step raises":
            raise ValueError("the physics\\nbroke")
        if self.mode == "step hangs":
            while True:
                pass
        return self.env.step(action)

def make(mode):
    return Hostile(mode)
"""


def hostile(tmp_path, mode, sync):
    (tmp_path / "envs.py").write_text(HOSTILE_ENVS)
    return make_vector_env(
        GymEnvSpec(
            name="hostile",
            entrypoint="envs.py:make",
            path=str(tmp_path),
            config={"mode": mode},
            num_envs=2,
            sync=sync,
        )
    )


@pytest.mark.parametrize("sync", [True, False], ids=["in process", "in a worker"])
def test_a_step_that_raises_is_one_line_naming_the_environment_and_the_call(tmp_path, sync):
    env = hostile(tmp_path, "step raises", sync)
    env.reset(seed=0)
    with pytest.raises(EnvironmentCallError) as err:
        env.step(np.zeros(2, dtype=np.int64))
    assert str(err.value) == (
        "environment.entrypoint envs.py:make: step raised ValueError: the physics broke"
    )
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "sync"),
    [("step hangs", True), ("step hangs", False), ("reset hangs", True), ("reset hangs", False)],
)
def test_an_environment_that_never_returns_is_stopped_at_the_time_limit(
    tmp_path, monkeypatch, mode, sync
):
    monkeypatch.setenv(ENV_VAR, "0.5")  # the workers inherit it
    call = mode.split()[0]
    env = hostile(tmp_path, mode, sync)
    with pytest.raises(UserCodeError) as err:
        env.reset(seed=0)
        env.step(np.zeros(2, dtype=np.int64))
    assert str(err.value) == (
        f"environment.entrypoint envs.py:make: {call} ran longer than the 0.5 s time limit for user "
        f"code and was stopped (set {ENV_VAR} to change it)"
    )
    env.close(**({} if sync else {"terminate": True}))
