"""The vector env of PettingZoo copies (agilerl/families/multi_agent/vector.py): its layout
(ma_interfaces.md: shapes per agent, seeded resets, autoreset, absent agents, action
masks, the cue game's known answers), and its worker processes (``environment.sync:
false``, the default): a worker that ends without an exception is one line naming the
environment, the copy, the call and how its process ended; workers end without tracebacks
when the trainer is gone; copies whose agents or spaces differ from the first's are
refused naming the environment, the agent and the space (as for single-agent runs,
tests/families/single_agent/test_vectorize.py and tests/families/test_python_env.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cue_vectors import COOP, cue_actions, vec
from support.ended_trainer import run_and_end, the_one_line

from agilerl.families.environments import EnvironmentCallError, EnvironmentSpecError
from agilerl.families.multi_agent.vector import FINAL, ParallelVecEnv, make_vector_env
from agilerl.models.env import PzEnvSpec
from agilerl.testing.cooperative import awkward_cue_game, cue_game

#: A parallel environment of two agents whose ``step`` ends its process (``os._exit(7)``)
#: after ``die_after`` steps in that process; ``make`` builds one with observations of one
#: more entry on each call.
DYING_ENV = """
import os
from pathlib import Path

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv


class Dying(ParallelEnv):
    metadata = {"name": "dying_v0"}

    def __init__(self, die_after=0, size=2):
        self.possible_agents = ["a_0", "b_0"]
        self.agents = []
        self.die_after, self.steps, self.size = die_after, 0, size

    def observation_space(self, agent):
        return spaces.Box(-1.0, 1.0, (self.size,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def _obs(self):
        return {agent: np.zeros(self.size, np.float32) for agent in self.agents}

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        return self._obs(), {agent: {} for agent in self.agents}

    def step(self, actions):
        self.steps += 1
        if self.steps > self.die_after:
            os._exit(7)
        done = self.steps % 10 == 0
        out = (self._obs(), {a: 1.0 for a in self.agents}, {a: False for a in self.agents},
               {a: done for a in self.agents}, {a: {} for a in self.agents})
        if done:
            self.agents = []
        return out


def make():
    # the calls are counted in a file: an entry point's module is imported anew each time
    calls = Path(__file__).with_name("calls")
    count = int(calls.read_text()) if calls.exists() else 0
    calls.write_text(str(count + 1))
    return Dying(die_after=1000, size=2 + count)
"""

NO_EXIT = "code a run calls may not end the process; raise an exception to stop the run"


def run_agilerl(tmp_path, *args, timeout=300):
    """``agilerl`` in a process of its own (the workers write to its stderr)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("agilerl")), *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=timeout, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


def test_an_environment_that_ends_its_worker_is_one_line_naming_it(tmp_path):
    """IPPO on two worker processes, whose environment calls ``os._exit`` in its 21st
    step: the trainer's ``EOFError`` traceback before."""
    (tmp_path / "dying.py").write_text(DYING_ENV)
    doc = {
        "algorithm": {"name": "IPPO", "batch_size": 8, "learn_step": 16},
        "environment": {"name": "dying", "entrypoint": "dying.py:Dying", "num_envs": 2,
                        "config": {"die_after": 20}},
        "training": {"max_steps": 200, "evo_steps": 100, "pop_size": 1, "seed": 0},
    }  # fmt: skip
    (tmp_path / "m.yaml").write_text(json.dumps(doc))
    result = run_agilerl(tmp_path, "train", "m.yaml", "--out", "run", "--quiet")
    line = the_one_line(result)
    assert re.fullmatch(
        r"agilerl: environment.entrypoint dying.py:Dying: the worker process of "
        r"sub-environment [01], during step, ended \(exit status 7\): " + re.escape(NO_EXIT),
        line,
    )
    assert not (tmp_path / "run" / "best_agent.pt").exists()


def dying_env(tmp_path, num_envs=2):
    (tmp_path / "dying.py").write_text(DYING_ENV)
    spec = PzEnvSpec(name="dying", entrypoint="dying.py:Dying", path=str(tmp_path),
                     num_envs=num_envs, config={"die_after": 1000})  # fmt: skip
    env = make_vector_env(spec)
    assert env.subprocess
    return env


def actions(num_envs):
    return {agent: np.zeros(num_envs, np.int64) for agent in ("a_0", "b_0")}


def test_a_killed_worker_is_one_error_and_the_other_workers_end(tmp_path):
    env = dying_env(tmp_path, num_envs=3)
    env.reset(seed=0)
    processes = env._envs.processes
    victim = processes[1]
    victim.kill()  # SIGKILL
    victim.join(timeout=30)
    with pytest.raises(EnvironmentCallError) as err:
        env.step(actions(3))
    assert str(err.value) == (
        "environment.entrypoint dying.py:Dying: the worker process of sub-environment 1, "
        f"during step, ended (killed by SIGKILL): {NO_EXIT}"
    )
    assert not any(process.is_alive() for process in processes)
    env.close()  # (what the trainer does next: nothing left to do)


def test_the_workers_end_quietly_when_the_trainer_is_gone(tmp_path):
    """The trainer ends (here: ``os._exit``) while its workers step (held stopped until
    it is gone): each one finds its pipe closed, on sending its reply or on waiting for
    the next command, and ends without printing a ``BrokenPipeError``/``EOFError``
    traceback. The run returns once every worker has closed its stderr, the pipe it
    shares."""
    code = (
        "import os, subprocess, sys, threading, time\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from pathlib import Path\n"
        "from test_vector import actions, dying_env\n"
        "env = dying_env(Path(sys.argv[2]))\n"
        "env.reset(seed=0)\n"
        "env.step(actions(2))\n"
        "pids = [str(process.pid) for process in env._envs.processes]\n"
        "subprocess.run(['kill', '-STOP', *pids], check=True)\n"
        # the next step is sent; the workers take it up once the trainer is gone
        "threading.Thread(target=env.step, args=(actions(2),), daemon=True).start()\n"
        "time.sleep(0.5)\n"
        "subprocess.Popen(['sh', '-c', f'sleep 1; kill -CONT {\" \".join(pids)}'])\n"
        "os._exit(3)\n"
    )
    assert run_and_end(code, Path(__file__).parent, tmp_path) == (3, "")


@pytest.mark.parametrize("sync", [True, False], ids=["in this process", "in worker processes"])
def test_an_entry_point_whose_spaces_change_between_calls_is_refused_naming_it(tmp_path, sync):
    """The batching's ``ValueError: could not broadcast input array`` before, at the
    first reset."""
    (tmp_path / "dying.py").write_text(DYING_ENV)
    spec = PzEnvSpec(name="shifting", entrypoint="dying.py:make", path=str(tmp_path),
                     num_envs=2, sync=sync)  # fmt: skip
    with pytest.raises(EnvironmentSpecError) as err:
        make_vector_env(spec)
    assert re.fullmatch(
        r"environment.entrypoint dying.py:make: the environments it made differ in their "
        r"observation space of agent 'a_0' \(Box\(-1.0, 1.0, \((\d+),\), float32\), then "
        r"Box\(-1.0, 1.0, \((?!\1)\d+,\), float32\)\); the environment.num_envs copies are "
        r"batched into one vector env, so every call must make an environment with the same "
        r"spaces",
        str(err.value),
    )


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
