"""PettingZoo environments from a spec (agilerl/families/multi_agent/envs.py): built from
a module, an entry point or an AEC game, their refusals, and the environment's own code
failing, hanging or observing wrongly. The vector env's layout: test_vector.py; the
buffers: test_buffers.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.conversions import parallel_to_aec
from support.cue_vectors import COOP, cue_actions, spec, vec

from agilerl.families.environments import EnvironmentCallError, EnvironmentSpecError
from agilerl.families.multi_agent.envs import make_parallel_env
from agilerl.families.multi_agent.vector import FINAL, make_vector_env
from agilerl.guards.time_limit import ENV_VAR
from agilerl.guards.user_code import UserCodeError
from agilerl.models.env import PzEnvSpec
from agilerl.testing.cooperative import cue_game

# --- building environments --------------------------------------------------------------


def test_mpe2_module_with_config_as_keywords():
    env = make_vector_env(
        PzEnvSpec(
            name="mpe2.simple_speaker_listener_v4",
            num_envs=2,
            sync=True,
            config={"continuous_actions": True, "max_cycles": 5},
        )
    )
    with env:
        assert env.agent_ids == ["speaker_0", "listener_0"]
        assert isinstance(env.action_spaces["speaker_0"], spaces.Box)  # the keyword took effect
        obs, _ = env.reset(seed=0)
        assert obs["speaker_0"].shape == (2, 3) and obs["listener_0"].shape == (2, 11)
        for _ in range(5):
            act = {a: np.stack([env.action_spaces[a].sample() for _ in range(2)]) for a in obs}
            obs, _, _, truncated, infos = env.step(act)
        assert infos[FINAL]["ended"].all() and truncated["speaker_0"].all()  # max_cycles 5


def test_old_pettingzoo_mpe_name_points_at_mpe2():
    with pytest.raises(EnvironmentSpecError, match="mpe2.simple_speaker_listener_v4"):
        make_parallel_env(spec(name="pettingzoo.mpe.simple_speaker_listener_v4"))


def test_unknown_module_and_bad_config_name_the_field():
    with pytest.raises(EnvironmentSpecError, match=r"environment.name: 'no_such_pz_env'"):
        make_parallel_env(spec(name="no_such_pz_env"))
    with pytest.raises(EnvironmentSpecError, match="environment.config"):
        make_parallel_env(spec(config={"no_such_option": 1}))


def test_entrypoint_builds_the_environment():
    env = make_parallel_env(
        spec(name="label", entrypoint=f"{COOP}:awkward_cue_game", config={"horizon": 6})
    )
    assert env.horizon == 6 and env.possible_agents == ["seer_0", "blind_0", "scout_0"]


def parallelizable_aec(**kwargs):
    return parallel_to_aec(cue_game(**kwargs))


class TurnBased(AECEnv):
    """A turn-based game (agents move one after another), as chess is."""

    metadata = {"name": "turn_based"}
    possible_agents = ["white", "black"]


def turn_based_aec():
    return TurnBased()


def test_aec_env_is_converted_when_parallelizable():
    env = make_parallel_env(spec(entrypoint=f"{__name__}:parallelizable_aec"))
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"seer_0", "blind_0"}


def test_turn_based_aec_env_is_refused_clearly():
    with pytest.raises(EnvironmentSpecError, match="turn-based .*is_parallelizable"):
        make_parallel_env(spec(entrypoint=f"{__name__}:turn_based_aec"))


def test_something_else_than_a_pettingzoo_env_is_refused():
    with pytest.raises(EnvironmentSpecError, match="not a PettingZoo ParallelEnv"):
        make_parallel_env(spec(entrypoint="builtins:dict"))


def test_integer_ids_become_strings_and_map_back():
    env = vec(2, config={"integer_ids": True})
    with env:
        assert env.agent_ids == ["0", "1"]
        obs, infos = env.reset(seed=4)
        rewards = env.step(cue_actions(env, obs, infos))[1]
        # the seer (id 0) named the cue, so the action reached the environment under id 0
        assert set(rewards) == {"0", "1"}
        seer_env = env._envs.subs[0].env.unwrapped
        assert seer_env.last_seer_action == int(obs["0"][0].argmax())


# --- the environment's own code: failures, hangs, wrong observations ----------------------

HOSTILE_PARALLEL = """
import time
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

class Hostile(ParallelEnv):
    metadata = {"name": "hostile"}

    def __init__(self, mode):
        self.mode = mode
        self.possible_agents = ["a", "b"]
        self.agents = []

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (4,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        shape = (3,) if self.mode == "reset shape" else (4,)
        return {a: np.zeros(shape, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions):
        if self.mode == "step raises":
            raise RuntimeError("agent b fell over")
        if self.mode == "step hangs":
            while True:
                time.sleep(0.01)
        obs = {a: np.zeros(4, np.float32) for a in self.agents}
        zero = {a: 0.0 for a in self.agents}
        false = {a: False for a in self.agents}
        return obs, zero, false, false, {a: {} for a in self.agents}

def make(mode):
    return Hostile(mode)
"""


def hostile(tmp_path, mode, sync):
    (tmp_path / "penvs.py").write_text(HOSTILE_PARALLEL)
    return make_vector_env(
        spec(
            name="hostile",
            entrypoint="penvs.py:make",
            path=str(tmp_path),
            config={"mode": mode},
            num_envs=2,
            sync=sync,
        )
    )


ACTIONS = {"a": np.zeros(2, dtype=np.int64), "b": np.zeros(2, dtype=np.int64)}
WORKER = "sub-environment 0 (worker process): "


@pytest.mark.parametrize("sync", [True, False], ids=["in process", "in a worker"])
def test_a_reset_with_the_wrong_observation_shape_is_refused(tmp_path, sync):
    env = hostile(tmp_path, "reset shape", sync)
    with pytest.raises(EnvironmentCallError) as err:
        env.reset(seed=0)
    assert str(err.value) == ("" if sync else WORKER) + (
        "environment.entrypoint penvs.py:make: reset returned an observation of shape (3,) for agent "
        "'a', whose observation space has shape (4,)"
    )
    env.close()


@pytest.mark.parametrize("sync", [True, False], ids=["in process", "in a worker"])
def test_a_step_that_raises_is_one_line_naming_the_environment_and_the_call(tmp_path, sync):
    env = hostile(tmp_path, "step raises", sync)
    env.reset(seed=0)
    with pytest.raises(EnvironmentCallError) as err:
        env.step(ACTIONS)
    assert str(err.value) == ("" if sync else WORKER) + (
        "environment.entrypoint penvs.py:make: step raised RuntimeError: agent b fell over"
    )
    env.close()


@pytest.mark.parametrize("sync", [True, False], ids=["in process", "in a worker"])
def test_a_step_that_never_returns_is_stopped_at_the_time_limit(tmp_path, monkeypatch, sync):
    monkeypatch.setenv(ENV_VAR, "0.3")  # the workers inherit it
    env = hostile(tmp_path, "step hangs", sync)
    env.reset(seed=0)
    with pytest.raises(UserCodeError) as err:
        env.step(ACTIONS)
    assert str(err.value) == ("" if sync else WORKER) + (
        "environment.entrypoint penvs.py:make: step ran longer than the 0.3 s time limit for user code "
        f"and was stopped (set {ENV_VAR} to change it)"
    )
    env.close()


def test_an_entry_point_file_is_found_beside_the_manifest(tmp_path, monkeypatch):
    from agilerl.trainer import LocalTrainer

    folder = tmp_path / "custom"
    folder.mkdir()
    (folder / "penvs.py").write_text("from agilerl.testing.cooperative import cue_game as make\n")
    environment = {"name": "cue", "entrypoint": "penvs.py:make", "num_envs": 2, "sync": True}
    (folder / "m.yaml").write_text(
        json.dumps({"algorithm": {"name": "IPPO"}, "environment": environment})
    )
    monkeypatch.chdir(tmp_path)  # the manifest's parent, not its folder
    trainer = LocalTrainer.from_manifest("custom/m.yaml")
    assert trainer.environment.path == str(folder.resolve())  # what its agents record
    trainer.preflight()  # builds one environment from the file
