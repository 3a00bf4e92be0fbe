"""What every family's environment side shares (agilerl/families/environments.py): the
one seam into an environment's code, importing the code target a manifest names, calling
a factory, the copies' spaces, and the error for a worker process found gone. Each
failure is one line naming the field or the call."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

import pytest

from agilerl.families import environments
from agilerl.families.environments import (
    EnvironmentCallError,
    EnvironmentSpecError,
    call_environment,
    call_factory,
    check_same_spaces,
    import_target,
    worker_end_error,
)
from agilerl.guards.user_code import NO_EXIT

WHERE = "environment.entrypoint"


# --- the seam into an environment's code ------------------------------------------------


def test_an_environments_call_returns_what_it_returns():
    assert call_environment("env corridor, step", lambda a, b=0: a + b, 2, b=3) == 5


def test_an_environments_failure_is_one_line_naming_the_environment_and_the_call():
    def step(action):
        raise RuntimeError("bad\n  action\n")

    with pytest.raises(EnvironmentCallError) as err:
        call_environment("env corridor, step", step, 1)
    assert str(err.value) == "env corridor, step raised RuntimeError: bad action"
    assert isinstance(err.value, EnvironmentSpecError)


# --- importing a target -----------------------------------------------------------------


def test_a_file_target_is_imported_relative_to_the_manifests_folder(tmp_path):
    (tmp_path / "envs.py").write_text("def make():\n    return 'made'\n")
    assert import_target("envs.py:make", WHERE, str(tmp_path))() == "made"


def test_a_file_target_without_a_folder_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "here.py").write_text("VALUE = 7\n")
    monkeypatch.chdir(tmp_path)
    assert import_target("here.py:VALUE", WHERE, None) == 7


def test_a_module_target_is_looked_up_in_the_manifests_folder_first(tmp_path, monkeypatch):
    name = "h_tests_only_module"
    (tmp_path / f"{name}.py").write_text("class Env:\n    pass\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # the folder it adds goes with the test
    monkeypatch.delitem(sys.modules, name, raising=False)
    assert import_target(f"{name}:Env", WHERE, str(tmp_path)).__name__ == "Env"
    assert import_target(f"{name}.Env", WHERE, str(tmp_path)).__name__ == "Env"


def test_a_missing_file_is_named_with_its_full_path(tmp_path):
    with pytest.raises(EnvironmentSpecError) as err:
        import_target("nope.py:make", WHERE, str(tmp_path))
    assert str(err.value) == f"{WHERE}: no file {(tmp_path / 'nope.py').resolve()}"


def test_a_module_that_fails_to_import_is_named_with_why(tmp_path):
    (tmp_path / "broken.py").write_text("import a_module_that_is_not_there_at_all\n")
    with pytest.raises(EnvironmentSpecError) as err:
        import_target("broken.py:make", WHERE, str(tmp_path))
    assert str(err.value).startswith(f"{WHERE}: cannot import 'broken.py': ")
    assert "a_module_that_is_not_there_at_all" in str(err.value)


def test_a_missing_attribute_is_named(tmp_path):
    (tmp_path / "envs.py").write_text("def make():\n    pass\n")
    with pytest.raises(EnvironmentSpecError) as err:
        import_target("envs.py:build", WHERE, str(tmp_path))
    assert str(err.value) == f"{WHERE}: 'envs.py' has no attribute 'build'"


# --- calling a factory ------------------------------------------------------------------


def _call(factory, **kwargs):
    return call_factory(factory, (), kwargs, WHERE, "envs.py:make", "environment.config")


def test_a_factory_is_called_with_the_sections_keywords():
    assert _call(lambda length=1: length * 2, length=4) == 8


def test_keywords_that_do_not_fit_the_signature_are_blamed_on_the_config():
    def make(length):
        return length

    with pytest.raises(EnvironmentSpecError) as err:
        _call(make, size=3)
    assert str(err.value).startswith("environment.config: envs.py:make: ")
    assert "size" in str(err.value)


def test_a_factory_that_raises_is_named_with_its_error():
    def make():
        raise ValueError("no such map")

    with pytest.raises(EnvironmentSpecError) as err:
        _call(make)
    assert str(err.value) == f"{WHERE}: envs.py:make raised ValueError: no such map"


# --- the copies' spaces -----------------------------------------------------------------


def test_copies_with_the_same_spaces_pass():
    first = {"observation space": "Box(4)", "action space": "Discrete(2)"}
    check_same_spaces("env make_corridor", first, [dict(first), dict(first)])


def test_a_copy_whose_space_differs_is_refused_naming_the_space_and_both_values():
    first = {"observation space": "Box(4)", "action space": "Discrete(2)"}
    other = {"observation space": "Box(4)", "action space": "Discrete(3)"}
    with pytest.raises(EnvironmentSpecError) as err:
        check_same_spaces("env make_corridor", first, [first, other])
    assert str(err.value).startswith(
        "env make_corridor: the environments it made differ in their action space "
        "(Discrete(2), then Discrete(3)); "
    )


# --- a worker process found gone --------------------------------------------------------


def _exit_with(status):
    os._exit(status)


def _started(target, *args):
    process = multiprocessing.get_context("fork").Process(target=target, args=args)
    process.start()
    return process


def test_a_gone_worker_is_named_with_its_copy_the_call_and_its_exit_status():
    running, gone = _started(time.sleep, 30), _started(_exit_with, 7)
    try:
        error = worker_end_error("environment.entrypoint dying.py:Dying", [running, gone], "step")
    finally:
        running.kill()
    assert str(error) == (
        "environment.entrypoint dying.py:Dying: the worker process of sub-environment 1, "
        f"during step, ended (exit status 7): {NO_EXIT}"
    )


def test_a_worker_whose_pipe_closed_but_runs_on_stopped_answering(monkeypatch):
    monkeypatch.setattr(environments, "WORKER_END_SECONDS", 0.2)
    running = _started(time.sleep, 30)
    try:
        error = environments.worker_end_error("env corridor", [running], "reset")
    finally:
        running.kill()
    assert str(error) == "env corridor: a worker process stopped answering"
