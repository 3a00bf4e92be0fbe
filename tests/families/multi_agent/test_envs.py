"""The environment side of multi-agent training: PettingZoo environments from a spec, the
vector env's layout (ma_interfaces.md) and the cue game's known answers. The buffers:
tests/families/multi_agent/test_buffers.py."""

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
from agilerl.families.multi_agent.vector import FINAL, ParallelVecEnv, make_vector_env
from agilerl.guards.time_limit import ENV_VAR
from agilerl.guards.user_code import UserCodeError
from agilerl.models.env import PzEnvSpec
from agilerl.testing.cooperative import awkward_cue_game, cue_game

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


# --- the vector env's layout --------------------------------------------------------------


def test_shapes_and_dtypes_per_agent():
    env = vec(3, entrypoint=f"{COOP}:awkward_cue_game")
    with env:
        obs, infos = env.reset(seed=0)
        assert obs["seer_0"].shape == (3, 3) and obs["seer_0"].dtype == np.float32
        assert obs["blind_0"]["observation"].shape == (3, 4)
        assert obs["scout_0"].shape == (3, 1, 6, 6) and obs["scout_0"].dtype == np.uint8
        out = env.step(cue_actions(env, obs, infos))
        for table in out[1:4]:
            assert set(table) == set(env.agent_ids)
            assert all(v.shape == (3,) for v in table.values())
        assert out[1]["seer_0"].dtype == np.float32 and out[2]["seer_0"].dtype == bool
        assert all(out[4][a]["active"].dtype == bool for a in env.agent_ids)


def test_seeded_resets_repeat_and_differ_per_copy():
    a, b = vec(4), vec(4)
    with a, b:
        first, _ = a.reset(seed=11)
        again, _ = b.reset(seed=11)
        np.testing.assert_array_equal(first["seer_0"], again["seer_0"])
        # copy i is seeded with seed + i: not all the same cue
        with vec(16) as many:
            cues = {tuple(row) for row in many.reset(seed=11)[0]["seer_0"]}
        assert len(cues) == 2
        # and the autoresets continue each copy's stream identically (3 episodes of 4)
        for _ in range(12):
            obs_a = a.step(cue_actions(a, first, {k: {} for k in a.agent_ids}))[0]
            obs_b = b.step(cue_actions(b, again, {k: {} for k in b.agent_ids}))[0]
            np.testing.assert_array_equal(obs_a["seer_0"], obs_b["seer_0"])
            first, again = obs_a, obs_b


def test_autoreset_gives_the_true_final_observation():
    env = vec(2, config={"horizon": 2, "num_actions": 2})
    with env:
        obs, infos = env.reset(seed=0)
        obs, _, _, truncated, infos = env.step(cue_actions(env, obs, infos))
        assert not infos[FINAL]["ended"].any()
        np.testing.assert_array_equal(infos[FINAL]["obs"]["blind_0"], obs["blind_0"])
        last_seer = cue_actions(env, obs, infos)["seer_0"]
        obs, _, _, truncated, infos = env.step(cue_actions(env, obs, infos))
        assert infos[FINAL]["ended"].all() and truncated["blind_0"].all()
        final = infos[FINAL]["obs"]["blind_0"]
        # the final observation shows the seer's last action; the reset one the start flag
        np.testing.assert_array_equal(final.argmax(axis=1), last_seer)
        assert (obs["blind_0"].argmax(axis=1) == 2).all()


def test_absent_agent_rows_are_zero_inactive_and_not_done():
    env = vec(2, entrypoint=f"{COOP}:awkward_cue_game", config={"horizon": 4})
    with env:
        obs, infos = env.reset(seed=1)
        actives = []
        for _ in range(4):
            obs, rewards, terminated, truncated, infos = env.step(cue_actions(env, obs, infos))
            actives.append(infos["scout_0"]["active"].copy())
            if not infos[FINAL]["ended"].any() and not infos["scout_0"]["active"].any():
                assert not obs["scout_0"].any()  # absent: zeros
                assert not rewards["scout_0"].any() and not terminated["scout_0"].any()
        # the scout leaves after horizon // 2 = 2 steps: it acted in steps 1 and 2 only
        assert [bool(a.all()) for a in actives] == [True, True, False, False]
        # after the autoreset the scout is back
        assert obs["scout_0"].any() and infos[FINAL]["ended"].all()


def test_scout_termination_is_reported_at_its_last_step():
    env = vec(1, entrypoint=f"{COOP}:awkward_cue_game", config={"horizon": 4})
    with env:
        obs, infos = env.reset(seed=1)
        obs, *_, infos = env.step(cue_actions(env, obs, infos))
        obs, _, terminated, _, infos = env.step(cue_actions(env, obs, infos))
        assert terminated["scout_0"].all() and not terminated["seer_0"].any()
        # its last observation is there to store; the one to act on is absent (zeros)
        assert infos[FINAL]["obs"]["scout_0"].any() and not obs["scout_0"].any()
        assert not infos[FINAL]["ended"].any()


def test_action_masks_from_info_and_dict_observation():
    env = vec(3, entrypoint=f"{COOP}:awkward_cue_game")
    with env:
        obs, infos = env.reset(seed=2)
        mask = infos["blind_0"]["action_mask"]
        assert mask.shape == (3, 3) and mask.dtype == bool
        np.testing.assert_array_equal(mask, obs["blind_0"]["action_mask"].astype(bool))
        assert (mask.sum(axis=1) == 2).all()  # one wrong action ruled out per step
        assert "action_mask" not in infos["seer_0"]
        obs, *_, infos = env.step(cue_actions(env, obs, infos))
        np.testing.assert_array_equal(
            infos["blind_0"]["action_mask"], obs["blind_0"]["action_mask"].astype(bool)
        )
        # the masks that go with the observations to store (here the same step's)
        final = infos[FINAL]
        np.testing.assert_array_equal(
            final["action_mask"]["blind_0"], final["obs"]["blind_0"]["action_mask"].astype(bool)
        )
        assert set(final["action_mask"]) == {"blind_0"}


def test_actions_are_never_replaced():
    env = vec(2)
    with env:
        env.reset(seed=0)
        with pytest.raises(KeyError, match="no action for agent"):
            env.step({"seer_0": np.zeros(2, dtype=np.int64)})
        with pytest.raises(KeyError, match="unknown agent id"):
            env.step({"ghost_0": np.zeros(2), "seer_0": np.zeros(2), "blind_0": np.zeros(2)})
        with pytest.raises(ValueError, match="leading dimension of 2"):
            env.step({"seer_0": np.zeros(3), "blind_0": np.zeros(3)})
    masked = vec(1, entrypoint=f"{COOP}:awkward_cue_game")
    with masked:
        obs, infos = masked.reset(seed=0)
        bad = cue_actions(masked, obs, infos)
        bad["blind_0"] = (~infos["blind_0"]["action_mask"]).argmax(axis=1)  # a masked one
        with pytest.raises(ValueError, match="masked action"):
            masked.step(bad)  # the environment sees exactly what was given


def test_subprocess_mode_matches_in_process():
    fields = {"entrypoint": f"{COOP}:awkward_cue_game", "config": {"integer_ids": True}}
    inproc, workers = vec(2, **fields), vec(2, **{**fields, "sync": False})
    with inproc, workers:
        assert workers.subprocess and not inproc.subprocess
        a, ia = inproc.reset(seed=5)
        b, ib = workers.reset(seed=5)
        for _ in range(6):
            a_out = inproc.step(cue_actions(inproc, a, ia))
            b_out = workers.step(cue_actions(workers, b, ib))
            for x, y in zip(a_out[1:4], b_out[1:4], strict=True):
                for agent in x:
                    np.testing.assert_array_equal(x[agent], y[agent])
            np.testing.assert_array_equal(a_out[0]["2"], b_out[0]["2"])
            a, ia, b, ib = a_out[0], a_out[4], b_out[0], b_out[4]


def test_workers_exit_when_their_trainer_is_killed(tmp_path):
    """kill -9 of the process that owns a worker-process vector env leaves no orphans."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "owner.py"
    script.write_text(
        "import sys, time\n"
        "from agilerl.models.env import PzEnvSpec\n"
        "from agilerl.families.multi_agent.vector import make_vector_env\n"
        f"env = make_vector_env(PzEnvSpec(name={COOP!r}, num_envs=3, sync=False))\n"
        "print(*(p.pid for p in env._envs.processes), flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in owner.stdout.readline().split()]
    assert len(workers) == 3
    owner.send_signal(signal.SIGKILL)
    owner.wait()

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for init is gone too
            return stat.read().split()[2] != "Z"

    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"worker processes {left} outlived their killed owner"


def test_subprocess_errors_name_the_sub_environment():
    env = vec(2, sync=False)
    with env:
        env.reset(seed=0)
        with pytest.raises(RuntimeError, match="sub-environment 0 .*no action for agent"):
            env.step({"seer_0": np.zeros(2, dtype=np.int64)})


@pytest.mark.parametrize(
    ("make", "outcomes"),
    # team returns of an optimal episode: the blind agent's first guess right, or wrong
    # (two agents over 4 steps; awkward: the scout adds its 2 steps)
    [(cue_game, {8.0, 6.0}), (awkward_cue_game, {10.0, 7.0})],
)
def test_optimal_team_reaches_the_known_optimum(make, outcomes):
    game = make()
    env = ParallelVecEnv([make] * 64)
    with env:
        obs, infos = env.reset(seed=0)
        returns = np.zeros(64)
        for _ in range(game.horizon):
            obs, rewards, *_, infos = env.step(cue_actions(env, obs, infos))
            returns += sum(rewards.values())
        assert infos[FINAL]["ended"].all()
    assert set(returns.tolist()) == outcomes
    assert abs(returns.mean() - game.optimal_team_return()) < 0.5
    assert game.random_team_return() < game.optimal_team_return() / 3


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
