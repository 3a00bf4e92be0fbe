"""Gymnasium's environment checker on a user's environment before the first step
(agilerl.families.single_agent.env_check): a failure is one located line, a warning a
located :class:`UserCodeWarning`."""

from __future__ import annotations

import shutil
import warnings

import gymnasium as gym
import pytest
from support import ROOT

from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.env_check import check_user_env
from agilerl.guards.user_code import UserCodeWarning
from agilerl.models.env import GymEnvSpec
from agilerl.trainer import LocalTrainer

#: Variants of the example corridor (examples/corridor/corridor.py), each with one fault.
FAULTS = """
from corridor import Corridor


class NoInfo(Corridor):  # reset returns the observation alone
    def reset(self, *, seed=None, options=None):
        return super().reset(seed=seed)[0]


class OutOfSpace(Corridor):  # a position beyond the Box(0, 1)
    def _observation(self):
        return np.array([self.position + 2.0], dtype=np.float32)


class Unseeded(Corridor):  # reset does not seed the environment's generator
    def reset(self, *, seed=None, options=None):
        self.position = 0
        return self._observation(), {}


class NoOptions(Corridor):  # the environment's own code raises on reset(options=...)
    def reset(self, *, seed=None, options=None):
        if options is not None:
            raise KeyError("options")
        return super().reset(seed=seed)


class OldSeed(Corridor):  # the gym-era seed method, which the checker warns of
    def seed(self, seed=None):
        return [seed]
"""

WHERE = "environment.entrypoint faults.py:{}"


@pytest.fixture
def env_dir(tmp_path, monkeypatch):
    shutil.copy(ROOT / "examples/corridor/corridor.py", tmp_path)
    (tmp_path / "faults.py").write_text("import numpy as np\n" + FAULTS)
    monkeypatch.syspath_prepend(str(tmp_path))  # faults.py imports the corridor
    return tmp_path


def trainer(env_dir, name: str) -> LocalTrainer:
    spec = GymEnvSpec(name=name, entrypoint=f"faults.py:{name}", path=str(env_dir), num_envs=1)
    return LocalTrainer("DQN", spec, {"max_steps": 100, "evo_steps": 50, "pop_size": 1})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NoInfo", "fails Gymnasium's environment checker (check_reset_return_type): The result returned by `env.reset()` was not a tuple of the form `(obs, info)`"),
        ("OutOfSpace", "fails Gymnasium's environment checker (check_reset_return_type): The first element returned by `env.reset()` is not within the observation space."),
        ("Unseeded", "fails Gymnasium's environment checker (check_reset_seed_determinism): Expects the random number generator to have been generated given a seed was passed to reset. Most likely the environment reset function does not call `super().reset(seed=seed)`."),
        ("NoOptions", "raised KeyError in Gymnasium's environment checker (check_reset_options): 'options'"),
    ],
)  # fmt: skip
def test_a_broken_user_environment_is_refused_before_the_first_step(env_dir, name, message):
    with pytest.raises(EnvironmentSpecError) as err:
        trainer(env_dir, name).preflight()  # before anything of the run is built
    assert str(err.value).startswith(f"{WHERE.format(name)}: {message}")
    assert "\n" not in str(err.value)


def test_a_checker_warning_is_one_located_warning(env_dir):
    with pytest.warns(UserCodeWarning) as caught:
        trainer(env_dir, "OldSeed").preflight()
    assert [str(w.message) for w in caught if w.category is UserCodeWarning] == [
        f"{WHERE.format('OldSeed')}: Official support for the `seed` function is dropped. "
        "Standard practice is to reset gymnasium environments using "
        "`env.reset(seed=<desired seed>)`"
    ]


def test_a_sound_environment_passes_without_warnings(env_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserCodeWarning)
        trainer(env_dir, "Corridor").preflight()


def test_the_check_takes_an_environment_object_too(env_dir):
    import faults

    where = "env Corridor"
    assert check_user_env(gym.wrappers.TimeLimit(faults.Corridor(), 50), where) == []
    assert check_user_env(faults.OldSeed(), where) == [
        f"{where}: Official support for the `seed` function is dropped. Standard practice is "
        "to reset gymnasium environments using `env.reset(seed=<desired seed>)`"
    ]
    with pytest.raises(EnvironmentSpecError, match=rf"^{where}: fails .*check_reset_return_type"):
        check_user_env(faults.NoInfo(), where)
