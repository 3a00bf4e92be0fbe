"""The one time limit on user code the engine calls: reward functions, the import of a
reward file, an environment's ``reset`` and ``step`` (in this process or in a worker).

A call that runs longer than the limit is stopped and reported as
:class:`TimeLimitExceeded`, one line naming what was called and the limit, so a hung
function stops the run instead of holding it forever.

The mechanism is ``SIGALRM`` (``signal.setitimer``), the only way to interrupt pure
Python code that never returns. Its limits, stated in docs/concepts/safety.md:

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
- code that blocks SIGALRM (``signal.pthread_sigmask``) is not interrupted while it is
  blocked (no watchdog thread does it instead: the trainer forks its vector-env workers,
  and forking a multi-threaded process can deadlock);
- while one limited call runs, a nested one runs under the outer limit (one timer).

The limit is :data:`DEFAULT_SECONDS`, or the environment variable :data:`ENV_VAR` (seconds
from :data:`MIN_SECONDS` to :data:`MAX_SECONDS`, or ``off``); worker processes inherit it.
"""

from __future__ import annotations

# signal's C module: its getsignal is 40x faster than signal's. CPython always ships it,
# but typeshed has no stub for it.
import _signal  # pyright: ignore[reportMissingImports]
import functools
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
#: The range of a limit :data:`ENV_VAR` may set. Below 10 ms a limit is shorter than a
#: busy machine's scheduling slice, so it would stop calls that do nothing wrong; above
#: a million seconds (11.6 days) it limits no call (``off`` says so), and far larger
#: values overflow ``signal.setitimer`` (2**31 s where ``time_t`` is 32 bits).
MIN_SECONDS, MAX_SECONDS = 0.01, 1e6
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


@functools.lru_cache(maxsize=8)
def _parse_limit(text: str) -> float | None:
    if not text:
        return DEFAULT_SECONDS
    if text.lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not MIN_SECONDS <= value <= MAX_SECONDS:  # (NaN is in no range)
        raise TimeLimitSettingError(
            f"{ENV_VAR}={text[:40]!r}: not a number of seconds from {MIN_SECONDS:g} to "
            f"{MAX_SECONDS:,.0f}, or 'off' for no limit"
        )
    return value


def limit_seconds() -> float | None:
    """The limit in force: :data:`ENV_VAR` when set, else :data:`DEFAULT_SECONDS`;
    None when it is ``off``."""
    return _parse_limit(os.environ.get(ENV_VAR, "").strip())


class _Call:
    """The limited call running now (one at a time: a nested call runs under it)."""

    active = False  # the user's code is running: the alarm interrupts it
    what, limit, first = "", 0.0, 0.0  # for the message; when the alarm first fired


def _on_alarm(signum: int, frame: Any) -> None:
    """Raise :class:`_Expired` in the user's code while a limited call runs; if that code
    keeps catching it for :data:`GRACE_SECONDS`, end the process (the only way left to
    stop pure Python that swallows every exception in a loop). Outside a call (this
    module disarming the timer), nothing."""
    if not _Call.active:
        return
    now = time.monotonic()
    _Call.first = _Call.first or now
    if now - _Call.first >= GRACE_SECONDS:
        message = (
            f"agilerl: {_Call.what} ran longer than the {_Call.limit:g} s time limit for "
            f"user code and kept catching the interruption for {GRACE_SECONDS:g} s more; "
            f"ending the process (exit status {FORCED_EXIT_STATUS})\n"
        )
        os.write(2, message.encode())
        os._exit(FORCED_EXIT_STATUS)
    raise _Expired


def _disarm() -> None:
    _Call.active = False
    signal.setitimer(signal.ITIMER_REAL, 0)


def call_with_time_limit(
    fn: Callable[..., T], /, *args: Any, what: str, seconds: float | None = None, **kwargs: Any
) -> T:
    """``fn(*args, **kwargs)``, stopped with :class:`TimeLimitExceeded` (naming ``what``)
    once it has run ``seconds`` (default: :func:`limit_seconds`). Anything else it raises
    passes through unchanged.

    The SIGALRM handler is installed on the first call and left in place (it does
    nothing between calls; it is put back if other code replaced it): installing and
    restoring it on every call doubled the cost of a CartPole step."""
    limit = limit_seconds() if seconds is None else seconds
    if (
        limit is None
        or _Call.active  # nested: the outer limit holds
        or not _HAS_ITIMER
        or threading.get_ident() != _MAIN_THREAD
        or signal.getitimer(signal.ITIMER_REAL)[0]  # another timer of this process
    ):
        return fn(*args, **kwargs)
    if _signal.getsignal(signal.SIGALRM) is not _on_alarm:  # (signal's wrapper: 4 us)
        signal.signal(signal.SIGALRM, _on_alarm)
    _Call.what, _Call.limit, _Call.first = what, limit, 0.0
    _Call.active = True
    try:
        try:
            # Armed inside the try: an alarm that fires before ``fn`` starts (the handler
            # runs as ``setitimer`` returns) is still caught and disarmed below.
            signal.setitimer(signal.ITIMER_REAL, limit, _REPEAT_SECONDS)
            return fn(*args, **kwargs)
        finally:
            _disarm()
    except _Expired:
        # (also where an alarm landed as fn returned, before ``_disarm`` cleared the flag)
        _disarm()
        raise TimeLimitExceeded(
            f"{what} ran longer than the {limit:g} s time limit for user code and was "
            f"stopped (set {ENV_VAR} to change it)"
        ) from None


_HAS_ITIMER = hasattr(signal, "setitimer")
#: Python runs signal handlers in the main thread only.
_MAIN_THREAD = threading.main_thread().ident
