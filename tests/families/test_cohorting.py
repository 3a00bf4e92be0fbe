"""A family's side of the cohort question (agilerl/families/cohorting.py): whether a
run's environment gives each agent of a cohort its own copies, and the run's
:class:`~agilerl.training.cohorting.Cohorting` built from it."""

from __future__ import annotations

from agilerl.families.cohorting import env_copies, run_cohorting
from agilerl.families.python_env import PythonEnv
from agilerl.training.cohorting import Cohorting, trains_in_cohorts


class Env:
    """An environment object (it has ``reset`` and ``step``)."""

    def reset(self, seed=None):
        return 0, {}

    def step(self, action):
        return 0, 0.0, False, False, {}


class Memory:
    pass


class OtherMemory:
    pass


SECTION = {"name": "CartPole-v1"}  # any environment section: only its presence matters


def test_a_named_environment_is_copied():
    assert env_copies(SECTION) is True


def test_an_environment_factory_given_in_python_is_copied():
    assert env_copies(SECTION, PythonEnv.of(Env)) is True
    assert env_copies(SECTION, PythonEnv.of(lambda: Env())) is True


def test_an_environment_object_given_in_python_is_the_runs_one_copy():
    assert env_copies(SECTION, PythonEnv.of(Env())) is False


def test_no_environment_section_is_nothing_to_copy_from():
    assert env_copies(None) is False
    assert env_copies(None, PythonEnv.of(Env)) is False


def test_the_runs_cohorting_carries_the_switch_the_copies_and_the_memory():
    run = run_cohorting(True, SECTION, None, Memory, [Memory, Memory])
    assert run == Cohorting(enabled=True, copies=True, memory=Memory, views=frozenset({Memory}))
    assert trains_in_cohorts(run)


def test_agents_train_alone_when_cohorts_are_off_or_the_environment_is_one_object():
    assert not trains_in_cohorts(run_cohorting(False, SECTION, None))
    assert not trains_in_cohorts(run_cohorting(True, SECTION, PythonEnv.of(Env())))


def test_a_memory_the_cohort_turn_has_no_view_of_keeps_agents_alone():
    assert not trains_in_cohorts(run_cohorting(True, SECTION, None, OtherMemory, [Memory]))
    assert trains_in_cohorts(run_cohorting(True, SECTION, None, None, [Memory]))
