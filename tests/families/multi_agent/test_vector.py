"""The worker processes of a PettingZoo vector env (``environment.sync: false``, the
default): a worker that ends without an exception is one line naming the environment, the
copy, the call and how its process ended; workers end without tracebacks when the trainer
is gone; copies whose agents or spaces differ from the first's are refused naming the
environment, the agent and the space (as for single-agent runs, tests/families/single_agent/test_vectorize.py
and tests/families/test_python_env.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.ended_trainer import run_and_end, the_one_line

from agilerl.families.environments import EnvironmentCallError, EnvironmentSpecError
from agilerl.families.multi_agent.vector import make_vector_env
from agilerl.models.env import PzEnvSpec

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
