"""What every family's environment side shares: the errors an environment spec raises,
the one seam into the user's environment code, importing a code target a manifest
names, calling a factory, the check that the copies of a vector env share their spaces,
and the error for a worker process found gone.

The single-agent builders (:mod:`agilerl.families.single_agent.envs`), the multi-agent
ones (:mod:`agilerl.families.multi_agent.envs`, :mod:`~agilerl.families.multi_agent.vector`),
the bandits' and the LLM family's environments all use these, so they live beside the
families rather than inside one of them. Nothing here imports Gymnasium or torch.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing.connection as mp_connection
import sys
from collections.abc import Mapping, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from agilerl.guards.manifest_code import split_target
from agilerl.guards.user_code import UserCodeError, call_user, worker_ended


class EnvironmentSpecError(ValueError):
    """An environment spec that cannot be built; the message names the field."""


class EnvironmentCallError(EnvironmentSpecError):
    """The environment's own code failed in a call the engine made (``reset``,
    ``step``): one line naming the environment and the call."""


def call_environment(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a method of the user's environment (``what`` names the
    environment and the call, built once by the caller), through
    :func:`~agilerl.guards.user_code.call_user` (time limit, ``sys.exit``); any exception it
    raises becomes one :class:`EnvironmentCallError` line. The one seam between the
    engine and an environment's code: single-agent (:class:`UserEnv`) and multi-agent
    alike, in this process or in a worker process (both errors pickle as their message)."""
    try:
        return call_user(fn, *args, what=what, **kwargs)
    except (UserCodeError, EnvironmentCallError):
        raise  # one line naming the call already
    except Exception as err:  # the user's code: any failure is reported as theirs
        message = " ".join(str(err).split())  # one line
        raise EnvironmentCallError(f"{what} raised {type(err).__name__}: {message}") from err


def import_target(target: str, where: str, path: str | None) -> Any:
    """``pkg.mod:attr``, ``file.py:attr`` (relative to ``path``) or ``pkg.mod.Attr``
    (:func:`agilerl.guards.manifest_code.split_target`, so it is what validate lists). A run's
    spec has ``path`` filled in from its manifest's folder
    (:func:`agilerl.guards.manifest_code.anchored`), and a module is looked up there first;
    None: a file is relative to the working directory, a module is imported from
    ``sys.path`` as it stands (the working directory is not added: a recorded section
    naming an installed module must get the installed one, :mod:`agilerl.guards.recorded_code`)."""
    base = Path(path) if path else Path.cwd()
    module_name, attr = split_target(target)
    try:
        if module_name.endswith(".py"):
            file = (base / module_name).resolve()
            if not file.is_file():
                raise EnvironmentSpecError(f"{where}: no file {file}")
            mod_spec = importlib.util.spec_from_file_location(file.stem, file)
            # A .py file always gets a spec, with a source file loader.
            assert mod_spec is not None and mod_spec.loader is not None
            module = importlib.util.module_from_spec(mod_spec)
            call_user(mod_spec.loader.exec_module, module, what=f"{where} {target}")
        else:
            if path and str(base) not in sys.path:
                sys.path.insert(0, str(base))
            module = call_user(importlib.import_module, module_name, what=f"{where} {target}")
    except (EnvironmentSpecError, UserCodeError):
        raise
    except Exception as err:  # the user's module failed to import: say which and why
        raise EnvironmentSpecError(f"{where}: cannot import {module_name!r}: {err}") from err
    try:
        return getattr(module, attr)
    except AttributeError:
        raise EnvironmentSpecError(f"{where}: {module_name!r} has no attribute {attr!r}") from None


def call_factory(
    factory: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: str,
    target: str,
    kwargs_at: str,
) -> Any:
    """``factory(*args, **kwargs)``, the user's code that builds an environment (an entry
    point, a wrapper) run by :func:`~agilerl.guards.user_code.call_user`: its failure is an
    :class:`EnvironmentSpecError` naming the field (``kwargs_at`` for a TypeError, most
    often keywords that do not fit the signature). Every family that builds environments
    from entry points calls its factories through this."""
    try:
        return call_user(factory, *args, what=f"{where} {target}", **kwargs)
    except TypeError as err:
        raise EnvironmentSpecError(f"{kwargs_at}: {target}: {err}") from err
    except UserCodeError:
        raise  # names the code and the exit already
    except Exception as err:
        raise EnvironmentSpecError(f"{where}: {target} raised {type(err).__name__}: {err}") from err


#: The spaces every copy of a vector env shares (it batches the copies on them):
#: attribute -> what a message calls it.
SHARED_SPACES = {"observation_space": "observation space", "action_space": "action space"}


def check_same_spaces(
    what: str, first: Mapping[str, Any], copies: Sequence[Mapping[str, Any]]
) -> None:
    """Refuse copies whose spaces differ from ``first``'s: what a factory that makes
    another environment on each call gives, which Gymnasium's vector envs refuse with a
    bare RuntimeError and PettingZoo's batching with a broadcast error. Each copy's spaces
    are keyed by what the message calls them (``action space``, ``observation space of
    agent 'a_0'``), in the order they are compared; ``what`` names the environment (``env
    make_corridor``, ``environment.entrypoint envs.py:make``)."""
    for own in copies:
        for name, expected in first.items():
            found = own[name]
            if found != expected:
                raise EnvironmentSpecError(
                    f"{what}: the environments it made differ in their {name} ({expected}, "
                    f"then {found}); the environment.num_envs copies are batched into one "
                    "vector env, so every call must make an environment with the same spaces"
                )


#: What a closed pipe to or from another process raises: on receiving, on sending.
PIPE_CLOSED = (EOFError, BrokenPipeError, ConnectionResetError)
#: How long the trainer waits to see a worker whose pipe closed end (a process closes its
#: pipes as it exits), to name it and say how it ended.
WORKER_END_SECONDS = 5.0


def worker_end_error(
    what: str, processes: Sequence[BaseProcess], call: str
) -> EnvironmentCallError:
    """The error for a worker process of the environment ``what`` found gone (its pipe
    closed) during ``call``: the first of ``processes`` (one per sub-environment) seen to
    end, named with how it ended (:func:`~agilerl.guards.user_code.worker_ended`). The caller
    ends the others (no reply is left to wait for)."""
    sentinels = [process.sentinel for process in processes]
    gone = mp_connection.wait(sentinels, timeout=WORKER_END_SECONDS)
    first = next((i for i, sentinel in enumerate(sentinels) if sentinel in gone), None)
    if first is None:  # its pipe closed and it ran on (the caller ends it)
        return EnvironmentCallError(f"{what}: a worker process stopped answering")
    process = processes[first]
    process.join(timeout=WORKER_END_SECONDS)  # closed its pipes; its exit status is next
    ended = f"{what}: the worker process of sub-environment {first}, during {call},"
    return EnvironmentCallError(worker_ended(ended, process.exitcode))
