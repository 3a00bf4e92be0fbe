"""Calling the user's code: the one place the engine hands control to code a manifest
names (an environment's entry point, wrappers, ``reset`` and ``step``; an LLM reward file
and its function).

:func:`call_user` is that place. What it guards against:

- user code that ends the process with ``sys.exit()`` (or ``raise SystemExit``), which
  Python would otherwise carry up through the run as a clean exit, status 0, with no
  outputs and no message;
- user code that never returns: it runs under the time limit of :mod:`agilerl.guards.time_limit`
  (``AGILERL_USER_CODE_TIMEOUT``, 60 s by default).

Either becomes a :class:`UserCodeError` naming what was called (and where the exit was
raised, or the limit); the run stops like any other refused run. A KeyboardInterrupt
(Ctrl-C) stays one, so an interrupted run is still reported as interrupted. Exceptions the
code raises pass through unchanged: each call site turns them into its own error naming
the manifest field.

What it cannot stop: ``os._exit()`` and signals end the process without running any
Python code, so nothing in that process can report them. Where the code runs in a worker
process (``vectorize: async``, the environment checker of such a run), the trainer reports
the worker's end in one line (:func:`worker_ended`).
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from agilerl.guards.time_limit import TimeLimitExceeded, call_with_time_limit

T = TypeVar("T")

#: What every message about user code that ended its process says to do instead.
NO_EXIT = "code a run calls may not end the process; raise an exception to stop the run"


class UserCodeWarning(UserWarning):
    """A finding about the user's code that does not stop the run (Gymnasium's
    environment checker's warnings): one line, prefixed with the manifest field that
    names the code (``environment.entrypoint corridor.py:make: ...``)."""


class UserCodeError(Exception):
    """User code called by the engine tried to end the process (the message names what
    was called and the file and line of the exit) or ran past the time limit (it names
    what was called and the limit)."""


def _origin(traceback: TracebackType | None) -> str:
    """``file:line`` of the innermost Python frame of ``traceback`` (the caller of
    ``sys.exit``, a builtin without a frame of its own)."""
    if traceback is None:
        return "an unknown place"
    while traceback.tb_next is not None:
        traceback = traceback.tb_next
    return f"{traceback.tb_frame.f_code.co_filename}:{traceback.tb_lineno}"


def call_user(fn: Callable[..., T], /, *args: Any, what: str, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, where ``fn`` is (or runs) the user's code and ``what``
    names it for a message (``environment.entrypoint envs.py:make``), under the time
    limit for user code. A ``SystemExit`` it raises, or the limit passing, becomes a
    :class:`UserCodeError`; everything else passes through."""
    try:
        return call_with_time_limit(fn, *args, what=what, **kwargs)
    except TimeLimitExceeded as err:
        raise UserCodeError(str(err)) from None
    except SystemExit as exit_:
        raise UserCodeError(
            f"{what} called sys.exit({exit_.code!r}) at {_origin(exit_.__traceback__)}: {NO_EXIT}"
        ) from None


def worker_ended(what: str, exitcode: int | None) -> str:
    """The line for a worker process that ended while it ran user code (``what`` names
    the code and the worker), from its ``multiprocessing`` exit code: the status it
    exited with (``os._exit(7)``, the time limit's forced exit), or minus the signal that
    killed it."""
    if exitcode is not None and exitcode < 0:
        how = f"killed by {_SIGNAL_NAMES.get(-exitcode, f'signal {-exitcode}')}"
    else:
        how = f"exit status {exitcode}"
    return f"{what} ended ({how}): {NO_EXIT}"


#: Signal numbers -> names (``SIGKILL``), for :func:`worker_ended`.
_SIGNAL_NAMES = {sig.value: sig.name for sig in signal.Signals}
