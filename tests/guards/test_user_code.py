"""User code that calls ``sys.exit`` cannot end a run silently (agilerl.guards.user_code): an
environment's entry point, ``reset`` or ``step``, a wrapper, a PettingZoo environment, an
LLM reward file or function. Each becomes one line naming the code and the exit's file
and line, and ``agilerl train`` exits 1."""

from __future__ import annotations

import functools
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from support import ROOT

from agilerl.cli import main
from agilerl.families.multi_agent.envs import make_parallel_env
from agilerl.families.multi_agent.vector import ParallelVecEnv
from agilerl.families.single_agent.envs import make_env, make_vector_env
from agilerl.guards.user_code import UserCodeError, call_user
from agilerl.llm.rewards import load_reward_fn
from agilerl.models.env import GymEnvSpec, PzEnvSpec

#: Environments that exit where ``where`` says: at import, when built, at reset or step.
EXITING_ENV = """
import sys

import gymnasium as gym
import numpy as np

if WHERE == "import":
    sys.exit(0)


class Exiting(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self):
        if WHERE == "build":
            sys.exit(0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if WHERE == "reset":
            sys.exit("bye")
        return np.zeros(2, np.float32), {}

    def step(self, action):
        if WHERE == "step":
            raise SystemExit(3)
        return np.zeros(2, np.float32), 1.0, False, False, {}
"""


def exiting_env(directory: Path, where: str) -> Path:
    path = directory / "exiting.py"
    path.write_text(f"WHERE = {where!r}\n" + EXITING_ENV)
    return path


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- the wrapper ------------------------------------------------------------------------


def test_call_user_turns_an_exit_into_an_error_naming_the_code_and_the_line():
    def leaves():
        sys.exit(0)

    with pytest.raises(UserCodeError) as err:
        call_user(leaves, what="environment.entrypoint m.py:leaves")
    line = leaves.__code__.co_firstlineno + 1
    assert str(err.value) == (
        f"environment.entrypoint m.py:leaves called sys.exit(0) at {__file__}:{line}: code a "
        "run calls may not end the process; raise an exception to stop the run"
    )


def test_call_user_passes_results_exceptions_and_interrupts_through():
    assert call_user(lambda a, b=0: a + b, 1, b=2, what="x") == 3
    with pytest.raises(ZeroDivisionError):
        call_user(lambda: 1 / 0, what="x")

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):  # Ctrl-C stays Ctrl-C
        call_user(interrupted, what="x")


# --- environments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "call", "exit_line", "code"),
    [
        ("import", "environment.entrypoint exiting.py:Exiting", "    sys.exit(0)", "0"),
        ("build", "environment.entrypoint exiting.py:Exiting", "            sys.exit(0)", "0"),
        ("reset", "environment.entrypoint exiting.py:Exiting: reset", 'sys.exit("bye")', "'bye'"),
        ("step", "environment.entrypoint exiting.py:Exiting: step", "raise SystemExit(3)", "3"),
    ],
)
def test_a_gymnasium_environment_that_exits_is_an_error_naming_it(
    tmp_path, where, call, exit_line, code
):
    path = exiting_env(tmp_path, where)
    spec = GymEnvSpec(name="exiting", entrypoint="exiting.py:Exiting", path=str(tmp_path))
    with pytest.raises(UserCodeError) as err:
        env = make_env(spec)
        env.reset(seed=0)
        env.step(0)
    line = line_of(path, exit_line)
    assert str(err.value).startswith(f"{call} called sys.exit({code}) at {path}:{line}: ")


def test_a_step_that_exits_in_a_vector_env_worker_is_the_same_error(tmp_path):
    exiting_env(tmp_path, "step")
    spec = GymEnvSpec(name="exiting", entrypoint="exiting.py:Exiting", path=str(tmp_path),
                      num_envs=2, sync=False)  # fmt: skip
    env = make_vector_env(spec)
    try:
        env.reset(seed=0)
        with pytest.raises(UserCodeError, match=r"exiting.py:Exiting: step called sys.exit\(3\)"):
            env.step([0, 0])
    finally:
        env.close(terminate=True)


PETTINGZOO_EXITING_WRAPPER = """
import sys

from pettingzoo.utils.wrappers import BaseParallelWrapper


class ExitOnStep(BaseParallelWrapper):
    def step(self, actions):
        sys.exit(0)
"""


@pytest.mark.parametrize("subprocess", [False, True], ids=["in process", "in a worker"])
def test_a_pettingzoo_step_that_exits_is_an_error_naming_the_environment(tmp_path, subprocess):
    (tmp_path / "exit_wrapper.py").write_text(PETTINGZOO_EXITING_WRAPPER)
    spec = PzEnvSpec(
        name="cue game",
        entrypoint="agilerl.testing.cooperative:cue_game",
        wrappers=["exit_wrapper.py:ExitOnStep"],
        path=str(tmp_path),
    )
    env = ParallelVecEnv([functools.partial(make_parallel_env, spec)] * 2, subprocess=subprocess)
    env.reset(seed=0)
    worker = r"sub-environment 0 \(worker process\): " if subprocess else ""
    with pytest.raises(
        UserCodeError,
        match=rf"^{worker}environment.entrypoint agilerl.testing.cooperative:cue_game: "
        r"step called sys.exit\(0\) at .*exit_wrapper.py:9: ",
    ):
        env.step({agent: np.zeros(2, np.int64) for agent in env.agent_ids})
    env.close()


def test_agilerl_train_on_an_environment_that_exits_says_so_and_exits_1(tmp_path, capsys):
    path = exiting_env(tmp_path, "step")
    document = {
        "version": 1,
        "algorithm": {"name": "DQN", "batch_size": 8, "learn_step": 4},
        "environment": {
            "name": "exiting",
            "entrypoint": "exiting.py:Exiting",
            "num_envs": 2,
            "sync": True,
            "path": str(tmp_path),
        },  # fmt: skip
        "training": {"max_steps": 40, "evo_steps": 20, "pop_size": 1, "seed": 0},
    }
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps(document))
    out = tmp_path / "run"
    assert main(["train", str(manifest), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # met before the first step: Gymnasium's environment checker steps the pre-flight's copy
    assert err.strip().splitlines()[-1] == (
        "agilerl: environment.entrypoint exiting.py:Exiting: Gymnasium's environment checker "
        f"called sys.exit(3) at "
        f"{path}:{line_of(path, 'raise SystemExit(3)')}: code a run calls may not end the "
        "process; raise an exception to stop the run"
    )
    assert not (out / "best_agent.pt").exists()


# --- LLM reward files -------------------------------------------------------------------


def test_a_reward_file_that_exits_at_import_is_an_error_naming_it(tmp_path):
    path = tmp_path / "reward.py"
    path.write_text("import sys\nsys.exit(0)\n")
    with pytest.raises(UserCodeError) as err:
        load_reward_fn(path, "reward")
    assert str(err.value).startswith(
        f"environment.reward_file_path {path} called sys.exit(0) at {path}:2: "
    )
    assert not [name for name in sys.modules if name.startswith("agilerl_reward_") and
                getattr(sys.modules[name], "__file__", None) == str(path)]  # fmt: skip


def test_a_reward_function_that_exits_is_an_error_naming_it(tmp_path):
    path = tmp_path / "reward.py"
    path.write_text("import sys\n\n\ndef reward(completion, answer, question):\n    sys.exit(0)\n")
    fn = load_reward_fn(path, "reward")
    with pytest.raises(UserCodeError) as err:
        fn("blue", "blue", "sky?")
    assert str(err.value).startswith(
        f"environment.reward_fn_name {path}:reward called sys.exit(0) at {path}:5: "
    )


@pytest.mark.slow
def test_agilerl_train_with_a_reward_function_that_exits_says_so_and_exits_1(tmp_path, capsys):
    from agilerl.llm.tiny import build_tiny_assets

    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    build_tiny_assets(tmp_path / "tiny-llm")
    reward = tmp_path / "tiny-llm" / "reward.py"
    reward.write_text(
        "import sys\n\n\ndef reward(completion, answer, question):\n    sys.exit(0)\n"
    )
    out = tmp_path / "run"
    args = ["train", str(tmp_path / "configs" / "grpo.yaml"), "--out", str(out),
            "--set", "training.max_steps=2", "--set", "training.evo_steps=1",
            "--set", "training.pop_size=1"]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # the file as the manifest names it: configs/../tiny-llm/reward.py
    named = tmp_path / "configs" / ".." / "tiny-llm" / "reward.py"
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        f"agilerl: environment.reward_fn_name {named}:reward called sys.exit(0) at {named}:5: "
    )
    assert not (out / "best_agent.pt").exists()
