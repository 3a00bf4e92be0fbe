"""The one time limit on user code the engine calls: reward functions, the import of a
reward file, an environment's ``reset`` and ``step`` (in this process or in a worker).

A call that runs longer than the limit is stopped and reported as
:class:`TimeLimitExceeded`, one line naming what was called and the limit, so a hung
function stops the run instead of holding it forever.

The mechanism is ``SIGALRM`` (``signal.setitimer``), the only way to interrupt pure
Python code that never returns. Its limits, stated in the README (Safety):

- it works only in the main thread of a process (Python runs signal handlers there
  only). Elsewhere the call runs without a limit. The engine calls user code in the
  main thread of the trainer and of each vector-environment worker process, so every
  call it makes is covered;
- a call blocked inside C code that does not return to the interpreter (a C extension
  spinning without checking for signals) is not stopped until it does;
- user code that catches the interruption (``except BaseException``) and goes on is
  interrupted again every 0.2 s; if it still has not let go :data:`GRACE_SECONDS`
  later, the process is ended with one line on stderr (a worker process's parent then
  reports the worker gone);
- while one limited call runs, a nested one runs under the outer limit (one timer).

The limit is :data:`DEFAULT_SECONDS`, or the environment variable :data:`ENV_VAR` (a
positive number of seconds, or ``off``); worker processes inherit it.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

#: Seconds one call of user code may take (a reward of one completion, one env step).
DEFAULT_SECONDS = 60.0
#: The environment variable that sets the limit: seconds, or ``off`` for none.
ENV_VAR = "AGILERL_USER_CODE_TIMEOUT"
#: Once the limit has passed, the signal repeats at this interval, so user code that
#: catches the first interruption (``except BaseException: pass`` in a loop) is
#: interrupted again until it lets go.
_REPEAT_SECONDS = 0.2
#: How long code may keep catching the interruption before the process is ended.
GRACE_SECONDS = 5.0
#: The exit status of a process ended that way.
FORCED_EXIT_STATUS = 1

T = TypeVar("T")


class TimeLimitExceeded(RuntimeError):
    """User code ran past the time limit; the message names the call and the limit."""


class TimeLimitSettingError(ValueError):
    """:data:`ENV_VAR` holds something that is not a limit."""


class _Expired(BaseException):
    """Raised inside the user's code by the alarm. A BaseException, so that the user's
    ``except Exception`` does not swallow it; converted at :func:`call_with_time_limit`."""


def limit_seconds() -> float | None:
    """The limit in force: :data:`ENV_VAR` when set, else :data:`DEFAULT_SECONDS`;
    None when it is ``off``."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return DEFAULT_SECONDS
    if text.lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise TimeLimitSettingError(
            f"{ENV_VAR}={text[:40]!r}: not a positive number of seconds (or 'off')"
        )
    return value


def _can_alarm() -> bool:
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0  # no limit already running
    )


def _alarm_handler(what: str, limit: float, active: list[bool]) -> Callable[[int, Any], None]:
    """The SIGALRM handler of one call: raise :class:`_Expired` in the user's code while
    it runs (``active[0]``); if that code keeps catching it for :data:`GRACE_SECONDS`,
    end the process (the only way left to stop pure Python that swallows every exception
    in a loop)."""
    first: list[float] = []

    def on_alarm(signum: int, frame: Any) -> None:
        if not active[0]:  # this module is disarming the timer: not the user's code
            return
        now = time.monotonic()
        first[:1] = first[:1] or [now]
        if now - first[0] >= GRACE_SECONDS:
            message = (
                f"agilerl: {what} ran longer than the {limit:g} s time limit for user "
                f"code and kept catching the interruption for {GRACE_SECONDS:g} s more; "
                f"ending the process (exit status {FORCED_EXIT_STATUS})\n"
            )
            os.write(2, message.encode())
            os._exit(FORCED_EXIT_STATUS)
        raise _Expired

    return on_alarm


def call_with_time_limit(
    fn: Callable[..., T], /, *args: Any, what: str, seconds: float | None = None, **kwargs: Any
) -> T:
    """``fn(*args, **kwargs)``, stopped with :class:`TimeLimitExceeded` (naming ``what``)
    once it has run ``seconds`` (default: :func:`limit_seconds`). Anything else it raises
    passes through unchanged."""
    limit = limit_seconds() if seconds is None else seconds
    if limit is None or not _can_alarm():
        return fn(*args, **kwargs)
    active = [True]
    previous = signal.signal(signal.SIGALRM, _alarm_handler(what, limit, active))

    def disarm() -> None:
        active[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    signal.setitimer(signal.ITIMER_REAL, limit, _REPEAT_SECONDS)
    try:
        try:
            return fn(*args, **kwargs)
        finally:
            disarm()
    except _Expired:
        # (also where an alarm landed as fn returned, before ``disarm`` set the flag)
        disarm()
        raise TimeLimitExceeded(
            f"{what} ran longer than the {limit:g} s time limit for user code and was "
            f"stopped (set {ENV_VAR} to change it)"
        ) from None
