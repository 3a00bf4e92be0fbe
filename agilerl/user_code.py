"""Calling the user's code: the one place the engine hands control to code a manifest
names (an environment's entry point, wrappers, ``reset`` and ``step``; an LLM reward file
and its function).

:func:`call_user` is that place. What it guards against:

- user code that ends the process with ``sys.exit()`` (or ``raise SystemExit``), which
  Python would otherwise carry up through the run as a clean exit, status 0, with no
  outputs and no message;
- user code that never returns: it runs under the time limit of :mod:`agilerl.time_limit`
  (``AGILERL_USER_CODE_TIMEOUT``, 60 s by default).

Either becomes a :class:`UserCodeError` naming what was called (and where the exit was
raised, or the limit); the run stops like any other refused run. A KeyboardInterrupt
(Ctrl-C) stays one, so an interrupted run is still reported as interrupted. Exceptions the
code raises pass through unchanged: each call site turns them into its own error naming
the manifest field.

What it cannot stop: ``os._exit()`` and signals end the process without running any
Python code, so nothing can report them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

from agilerl.time_limit import TimeLimitExceeded, call_with_time_limit

T = TypeVar("T")


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
            f"{what} called sys.exit({exit_.code!r}) at {_origin(exit_.__traceback__)}: code "
            "a run calls may not end the process; raise an exception to stop the run"
        ) from None
