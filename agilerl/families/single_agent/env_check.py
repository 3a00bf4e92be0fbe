"""Gymnasium's environment checker (``gymnasium.utils.env_checker.check_env``) on a user's
environment, once, before a run's first step.

An environment from an entry point is the user's code: the checker resets and steps it
with seeds and asserts what Gymnasium's API asks for (``reset`` returns ``(obs, info)``,
observations lie in the observation space, seeding makes it deterministic). What it
finds is reported in the run's terms, never as a traceback:

* a failure is one :class:`~agilerl.families.environments.EnvironmentSpecError`
  line naming where the environment came from and the check that failed;
* a warning (the checker's ``gymnasium.logger.warn``, or any the environment gives
  during the check) is one line prefixed with the same location, issued as a
  :class:`~agilerl.guards.user_code.UserCodeWarning` by :func:`report_user_env`.

Registered Gymnasium ids are not checked: Gymnasium's own environments pass, and its
``make`` already wraps them in the passive checker. The checker resets and steps the
environment it is given: hand it a copy the run will not use (the pre-flight's own).
Where the run steps its copies in worker processes (``vectorize: async``), the check runs
in one too (:func:`report_user_env_in_worker`), so an environment that ends its process
(``os._exit``) ends that worker, reported in one line, not the trainer.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import re
import traceback
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection

import gymnasium as gym
from gymnasium.utils import env_checker, passive_env_checker
from gymnasium.vector.utils import CloudpickleWrapper

from agilerl.families.environments import EnvironmentSpecError
from agilerl.guards.user_code import UserCodeError, UserCodeWarning, call_user, worker_ended

#: The checker's modules: the frame of the check that failed is the innermost in them.
CHECKER_FILES = (env_checker.__file__, passive_env_checker.__file__)
#: The seed of the actions the checker samples, so that a check is the same every time
#: (its resets are seeded by the checker itself).
ACTION_SEED = 0
#: Checker warnings that point at no fault of the user's environment here (a part of the
#: message -> why it is not reported).
NOT_FAULTS = {
    "is different from the unwrapped version": "the checker is handed the environment "
    "with the manifest's wrappers on purpose: it is what the run steps",
    "observation space minimum value is -infinity": "unbounded observations are common "
    "(CartPole's, MuJoCo's) and the engine does not rely on their bounds",
    "observation space maximum value is infinity": "as the minimum",
    "recommend using a symmetric and normalized space": "the engine's policies squash "
    "their actions into the space's own bounds (agilerl.networks.distributions)",
}
#: Colour codes, and the level prefix of ``gymnasium.logger.warn``.
_COLOUR, _LEVEL = re.compile(r"\x1b\[[0-9;]*m"), re.compile(r"^WARN: ")


def check_user_env(env: gym.Env, where: str) -> list[str]:
    """Run Gymnasium's environment checker on ``env`` (``where`` names its origin:
    ``environment.entrypoint corridor.py:make``). Returns its warnings as located lines
    (``<where>: <warning>``), each once; raises :class:`EnvironmentSpecError` (one line:
    ``where``, the check and why) when a check fails or the environment's code raises
    during one, and :class:`~agilerl.guards.user_code.UserCodeError` when it exits or runs past
    the time limit for user code."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            env.action_space.seed(ACTION_SEED)
            # Rendering plays no part in training, and the close check makes a new
            # environment from a registry spec, which an entry point's has not.
            call_user(
                env_checker.check_env,
                env,
                skip_render_check=True,
                skip_close_check=True,
                what=f"{where}: Gymnasium's environment checker",
            )
        except UserCodeError:
            raise  # names the code and the exit or the limit already
        except Exception as err:  # the checker's verdict, or the environment's own error
            raise EnvironmentSpecError(_failure(where, err)) from err
    found: list[str] = []
    for warning in caught:
        text = " ".join(_LEVEL.sub("", _COLOUR.sub("", str(warning.message))).split())
        line = f"{where}: {text}"
        if line not in found and not any(part in text for part in NOT_FAULTS):
            found.append(line)
    return found


def report_user_env(env: gym.Env, where: str) -> None:
    """:func:`check_user_env`, its warnings issued as :class:`UserCodeWarning` lines."""
    for line in check_user_env(env, where):
        warnings.warn(line, UserCodeWarning, stacklevel=2)


def report_user_env_in_worker(make: Callable[[], gym.Env], where: str) -> None:
    """:func:`report_user_env` on the environment ``make`` builds, in a worker process
    started as ``AsyncVectorEnv`` starts its own (``make`` goes to it by cloudpickle).
    Its refusal is raised here as it is there; a worker that ends without one (the
    environment's ``os._exit``, a signal) is one :class:`EnvironmentSpecError` line
    naming ``where`` and how the process ended."""
    context = multiprocessing.get_context()
    receiver, sender = context.Pipe(duplex=False)
    worker = context.Process(
        target=_check_in_worker, args=(CloudpickleWrapper(make), where, sender), daemon=True
    )
    worker.start()
    sender.close()  # the worker's end: once it exits, no process holds it and recv ends
    try:
        refusal, found = receiver.recv()
    except EOFError:
        worker.join()
        what = f"{where}: the worker process of Gymnasium's environment checker"
        raise EnvironmentSpecError(worker_ended(what, worker.exitcode)) from None
    finally:
        receiver.close()
    worker.join()
    if refusal is not None:
        raise refusal
    for line in found:
        warnings.warn(line, UserCodeWarning, stacklevel=2)


def _check_in_worker(make: Callable[[], gym.Env], where: str, sender: Connection) -> None:
    """In the worker process: build the environment, check it, and send back
    ``(None, its warnings)`` or ``(the one-line error, [])`` (both pickle as their
    message). Ctrl-C reaches the trainer too, which reports it: nothing to send."""
    reply: tuple[Exception | None, list[str]]
    try:
        env = make()
        try:
            reply = (None, check_user_env(env, where))
        finally:
            env.close()
    except (EnvironmentSpecError, UserCodeError) as err:
        reply = (err, [])
    except KeyboardInterrupt:
        return
    with contextlib.suppress(BrokenPipeError):  # the trainer is gone: no one to tell
        sender.send(reply)


def _failure(where: str, err: BaseException) -> str:
    """One line for a check that failed: the checker's own verdict (raised in its
    modules), or an exception the environment's code raised in a call the checker made;
    either names the innermost check of the checker's that was running."""
    frames = traceback.extract_tb(err.__traceback__)
    checks = [frame.name for frame in frames if frame.filename in CHECKER_FILES]
    check = checks[-1] if checks else "check_env"
    message = " ".join(str(err).split()) or "(no message)"
    if frames and frames[-1].filename in CHECKER_FILES:  # the checker's own verdict
        return f"{where}: fails Gymnasium's environment checker ({check}): {message}"
    return (
        f"{where}: raised {type(err).__name__} in Gymnasium's environment checker "
        f"({check}): {message}"
    )
