"""``environment.vectorize``: the choice table, its refusals (exact messages), the line
``agilerl validate`` prints and the worker processes a run counts."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from pydantic import ValidationError
from support.ended_trainer import run_and_end, the_one_line

from agilerl.cli import main
from agilerl.families.single_agent.vectorize import (
    VECTORISATIONS,
    VectorizeError,
    describe_vectorize,
    native_ids,
    resolve_vectorize,
)
from agilerl.models.env import GymEnvSpec, OfflineEnvSpec

NATIVE_IDS = "CartPole-v0, CartPole-v1"


def kind(**fields):
    return resolve_vectorize(GymEnvSpec(**{"name": "CartPole-v1", **fields})).kind


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, "native"),  # unset: native where the environment has it ...
        ({"sync": True}, "native"),  # ... whatever sync says
        ({"vectorize": "native"}, "native"),
        ({"vectorize": "sync"}, "sync"),
        ({"vectorize": "sync", "sync": True}, "sync"),  # the two agree
        ({"vectorize": "async"}, "async"),
        ({"vectorize": "native", "sync": False}, "native"),  # false is the default: silent
        ({"name": "Pendulum-v1"}, "async"),  # unset and not native: as sync says
        ({"name": "Pendulum-v1", "sync": True}, "sync"),
        ({"name": "phys2d/CartPole-v1"}, "async"),  # a vector entry point without a row reset
        ({"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"]}, "async"),
        ({"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"], "sync": True}, "sync"),
        ({"entrypoint": "envs.py:make", "sync": True}, "sync"),
        ({"name": "NotRegistered-v0"}, "async"),  # building it reports the unknown name
    ],
)
def test_the_choice(fields, expected):
    assert kind(**fields) == expected


def test_the_offline_section_chooses_alike():
    spec = OfflineEnvSpec(name="CartPole-v1", dataset_path="data.h5", vectorize="sync")
    assert resolve_vectorize(spec).kind == "sync"
    assert resolve_vectorize(spec.model_copy(update={"vectorize": None})).kind == "native"


def test_only_async_runs_worker_processes():
    assert {name: v.workers for name, v in VECTORISATIONS.items()} == {
        "native": False,
        "sync": False,
        "async": True,
    }


def test_native_ids_are_those_with_a_row_reset():
    assert ", ".join(native_ids()) == NATIVE_IDS


REFUSALS = {
    "no native environment": (
        {"name": "Pendulum-v1", "vectorize": "native"},
        "environment.vectorize: 'native' is not available: 'Pendulum-v1' has no native vector "
        f"environment here (those that do: {NATIVE_IDS}); use 'sync' or 'async'",
    ),
    "an entry point": (
        {"name": "grid", "entrypoint": "envs.py:make", "vectorize": "native"},
        "environment.vectorize: 'native' is not available: environment.entrypoint envs.py:make "
        "builds one environment at a time; only a registered Gymnasium id with a vector entry "
        "point steps its copies at once; use 'sync' or 'async'",
    ),
    "wrappers": (
        {"wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"], "vectorize": "native"},
        "environment.vectorize: 'native' is not available: environment.wrappers wrap one "
        "environment each, and a native environment is every copy at once; use 'sync' or 'async'",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refusal_is_one_line_naming_the_field(case):
    fields, message = REFUSALS[case]
    with pytest.raises(VectorizeError) as err:
        kind(**fields)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("fields", "line"),
    [
        (
            {},
            "environment: CartPole-v1, 8 copies, vectorised natively (vectorize: native, the default)",
        ),
        (
            {"vectorize": "native", "num_envs": 1},
            "environment: CartPole-v1, 1 copy, vectorised natively (vectorize: native)",
        ),
        (
            {"vectorize": "sync", "num_envs": 2},
            "environment: CartPole-v1, 2 copies, in this process by SyncVectorEnv (vectorize: sync)",
        ),
        (
            {"name": "Pendulum-v1", "num_envs": 1_000},
            "environment: Pendulum-v1, 1,000 copies, one worker process each by AsyncVectorEnv "
            "(vectorize: async, the default)",
        ),
    ],
)
def test_the_line_validate_prints(fields, line):
    assert (
        describe_vectorize(GymEnvSpec(**{"name": "CartPole-v1", "num_envs": 8, **fields})) == line
    )


def manifest(tmp_path, **environment):
    path = tmp_path / "run.yaml"
    doc = {
        "algorithm": {"name": "DQN"},
        "environment": {"name": "CartPole-v1", "num_envs": 8, **environment},
    }
    path.write_text(json.dumps(doc))  # JSON is YAML
    return path


def test_validate_says_how_the_copies_run(tmp_path, capsys):
    path = manifest(tmp_path)
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}: valid (DQN on CartPole-v1)",
        "  environment: CartPole-v1, 8 copies, vectorised natively (vectorize: native, the default)",
    ]
    assert main(["validate", "--format", "json", str(path)]) == 0
    entry = json.loads(capsys.readouterr().out)[str(path)]
    assert entry["environment"] == out[1].strip()


def test_validate_refuses_what_a_run_would_refuse(tmp_path, capsys):
    path = manifest(tmp_path, name="Pendulum-v1", vectorize="native")
    message = REFUSALS["no native environment"][1]
    assert main(["validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"{path}: {message}\n"
    assert main(["validate", "--format", "json", str(path)]) == 1
    entry = json.loads(capsys.readouterr().out)[str(path)]
    assert entry == {"valid": False, "errors": [{"message": message}]}


@pytest.mark.parametrize("vectorize", ["native", "async"])
def test_sync_beside_a_vectorize_that_decides_is_the_schemas_refusal(vectorize, capsys, tmp_path):
    because = (
        f'environment.sync: sync must not be true when vectorize is "{vectorize}": sync: true '
        "asks for SyncVectorEnv, and vectorize decides how the copies run; leave sync out "
        "(found True)"
    )
    with pytest.raises(ValidationError, match="sync must not be true when vectorize is"):
        GymEnvSpec(name="CartPole-v1", sync=True, vectorize=vectorize)
    path = manifest(tmp_path, sync=True, vectorize=vectorize)  # one line of JSON
    assert main(["validate", str(path)]) == 1
    located = [line.strip() for line in capsys.readouterr().err.splitlines() if because in line]
    assert len(located) == 1 and located[0].startswith(f"{path}:1:")
    assert GymEnvSpec(name="CartPole-v1", sync=True, vectorize="sync").sync  # they agree


def test_workers_are_counted_by_the_choice():
    from agilerl.families.single_agent.family import gym_env_workers

    for vectorize, workers in (("native", 0), ("sync", 0), ("async", 3)):
        ctx = SimpleNamespace(environment=GymEnvSpec(name="CartPole-v1", vectorize=vectorize))
        assert gym_env_workers(ctx, SimpleNamespace(num_envs=3)) == workers  # pyright: ignore[reportArgumentType]


def test_a_run_refuses_it_in_one_line(tmp_path, capsys):
    path = manifest(tmp_path, name="Pendulum-v1", vectorize="native")
    path.write_text(path.read_text().replace('"DQN"', '"TD3"'))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"agilerl: {REFUSALS['no native environment'][1]}"


# --- a worker process that ends ---------------------------------------------------------

#: An environment whose ``step`` ends its process (``os._exit(7)``) after ``die_after``
#: steps in that process: in the environment checker, or in a run's worker.
DYING_ENV = """
import os

import gymnasium as gym
import numpy as np


class Dying(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, die_after=0):
        self.die_after, self.steps = die_after, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.steps > self.die_after:
            os._exit(7)
        return np.zeros(2, np.float32), 1.0, False, self.steps % 10 == 0, {}
"""


def train_dying(tmp_path, die_after):
    """``agilerl train`` (a process of its own: the workers write to its stderr) of the
    dying environment on two worker processes."""
    (tmp_path / "dying.py").write_text(DYING_ENV)
    doc = {
        "algorithm": {"name": "DQN", "batch_size": 8, "learn_step": 4},
        "environment": {"name": "dying", "entrypoint": "dying.py:Dying", "num_envs": 2,
                        "vectorize": "async", "config": {"die_after": die_after}},
        "training": {"max_steps": 200, "evo_steps": 100, "pop_size": 1, "seed": 0},
    }  # fmt: skip
    (tmp_path / "m.yaml").write_text(json.dumps(doc))
    return subprocess.run(
        [str(Path(sys.executable).with_name("agilerl")), "train", "m.yaml", "--out", "run", "--quiet"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip


NO_EXIT = "code a run calls may not end the process; raise an exception to stop the run"


@pytest.mark.parametrize(
    ("die_after", "where"),
    [
        # Gymnasium's environment checker steps it first: in a worker, as the run would
        (0, "the worker process of Gymnasium's environment checker"),
        (20, "the worker process of sub-environment [01], during step,"),  # the run's
    ],
    ids=["in the environment checker", "in training"],
)
def test_an_environment_that_ends_its_worker_is_one_line_naming_it(tmp_path, die_after, where):
    result = train_dying(tmp_path, die_after)
    line = the_one_line(result)
    assert re.fullmatch(
        rf"agilerl: environment.entrypoint dying.py:Dying: {where} ended \(exit status 7\): "
        + re.escape(NO_EXIT),
        line,
    )
    assert not (tmp_path / "run" / "best_agent.pt").exists()


def dying_env(tmp_path, num_envs=2):
    from gymnasium.vector import AsyncVectorEnv

    from agilerl.families.single_agent.envs import make_vector_env

    (tmp_path / "dying.py").write_text(DYING_ENV)
    spec = GymEnvSpec(name="dying", entrypoint="dying.py:Dying", path=str(tmp_path),
                      num_envs=num_envs, vectorize="async", config={"die_after": 1000})  # fmt: skip
    env = make_vector_env(spec)
    assert isinstance(env, AsyncVectorEnv)
    return env


def test_a_killed_worker_is_one_error_and_the_other_workers_end(tmp_path):
    from agilerl.families.environments import EnvironmentCallError

    env = dying_env(tmp_path, num_envs=3)
    env.reset(seed=0)
    victim = env.processes[1]
    victim.kill()  # SIGKILL
    victim.join(timeout=30)
    with pytest.raises(EnvironmentCallError) as err:
        env.step(np.zeros(3, np.int64))
    assert str(err.value) == (
        "environment.entrypoint dying.py:Dying: the worker process of sub-environment 1, "
        f"during step, ended (killed by SIGKILL): {NO_EXIT}"
    )
    assert env.closed and not any(process.is_alive() for process in env.processes)
    env.close()  # (what the trainer does next: nothing left to do)


def test_the_workers_end_quietly_when_the_trainer_is_gone(tmp_path):
    """The trainer killed (here: ``os._exit``): each worker sees its pipe closed and ends
    without printing gymnasium's ``EOFError``/``BrokenPipeError`` tracebacks. The run
    returns once every worker has closed its stderr, the pipe it shares."""
    code = (
        "import os, sys, numpy as np\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from test_vectorize import dying_env\n"
        "from pathlib import Path\n"
        "env = dying_env(Path(sys.argv[2]))\n"
        "env.reset(seed=0)\n"
        "env.step(np.zeros(2, np.int64))\n"
        "os._exit(3)\n"
    )
    assert run_and_end(code, Path(__file__).parent, tmp_path) == (3, "")
