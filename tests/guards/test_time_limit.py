"""The one time limit on user code (agilerl/guards/time_limit.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from agilerl.guards.time_limit import (
    DEFAULT_SECONDS,
    ENV_VAR,
    FORCED_EXIT_STATUS,
    GRACE_SECONDS,
    MAX_SECONDS,
    MIN_SECONDS,
    TimeLimitExceeded,
    TimeLimitSettingError,
    call_with_time_limit,
    limit_seconds,
)


def _spin() -> None:
    while True:
        pass


def test_an_endless_function_is_stopped_with_its_name_and_the_limit() -> None:
    started = time.monotonic()
    with pytest.raises(TimeLimitExceeded) as err:
        call_with_time_limit(_spin, what="reward.py: score", seconds=0.2)
    assert str(err.value) == (
        "reward.py: score ran longer than the 0.2 s time limit for user code and was "
        f"stopped (set {ENV_VAR} to change it)"
    )
    assert time.monotonic() - started < 5


def test_code_that_swallows_the_interruption_ends_the_process_after_the_grace() -> None:
    """Pure Python that catches every exception in a loop cannot be stopped otherwise."""
    code = (
        "import time\n"
        "from agilerl.guards.time_limit import call_with_time_limit\n"
        "def spin():\n"
        "    while True:\n"
        "        try:\n"
        "            time.sleep(0.01)\n"
        "        except BaseException:\n"
        "            pass\n"
        "call_with_time_limit(spin, what='reward.py: score', seconds=0.2)\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == FORCED_EXIT_STATUS
    assert result.stderr == (
        "agilerl: reward.py: score ran longer than the 0.2 s time limit for user code and "
        f"kept catching the interruption for {GRACE_SECONDS:g} s more; ending the process "
        f"(exit status {FORCED_EXIT_STATUS})\n"
    )
    assert time.monotonic() - started < 30


def test_a_sleeping_call_is_stopped_and_the_timer_is_disarmed_after() -> None:
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(TimeLimitExceeded):
        call_with_time_limit(time.sleep, 30, what="import of reward.py", seconds=0.2)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before
    time.sleep(0.5)  # no late alarm reaches the caller


def test_results_and_errors_pass_through() -> None:
    assert call_with_time_limit(lambda a, b=0: a + b, 1, b=2, what="f", seconds=5) == 3

    def fail() -> None:
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        call_with_time_limit(fail, what="f", seconds=5)


def test_a_nested_call_runs_under_the_outer_limit() -> None:
    def outer() -> None:
        call_with_time_limit(_spin, what="inner", seconds=100)

    with pytest.raises(TimeLimitExceeded, match="^outer ran longer than the 0.3 s"):
        call_with_time_limit(outer, what="outer", seconds=0.3)


def test_off_the_main_thread_the_call_runs_without_a_limit() -> None:
    """Python runs signal handlers only in the main thread (documented limit)."""
    result: list[int] = []
    worker = threading.Thread(
        target=lambda: result.append(call_with_time_limit(lambda: 7, what="f", seconds=0.01))
    )
    worker.start()
    worker.join()
    assert result == [7]


def test_the_limit_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert limit_seconds() == DEFAULT_SECONDS
    monkeypatch.setenv(ENV_VAR, "2.5")
    assert limit_seconds() == 2.5
    monkeypatch.setenv(ENV_VAR, "off")
    assert limit_seconds() is None
    monkeypatch.setenv(ENV_VAR, "0.2")
    with pytest.raises(TimeLimitExceeded, match="0.2 s time limit"):
        call_with_time_limit(_spin, what="f")


def refusal(text: str) -> str:
    return (
        f"{ENV_VAR}={text!r}: not a number of seconds from 0.01 to 1,000,000, or 'off' for no limit"
    )


#: Not a limit: not a number, none at all, below a scheduler's slice (1e-300 once died of
#: its own alarm), or beyond what setitimer takes (1e300 overflowed it).
BAD_SETTINGS = ["abc", "0", "-1", "nan", "inf", "1e-300", "0.009", "1000001", "1e300"]


@pytest.mark.parametrize("text", BAD_SETTINGS)
def test_a_bad_limit_setting_is_one_line(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(ENV_VAR, text)
    with pytest.raises(TimeLimitSettingError) as err:
        limit_seconds()
    assert str(err.value) == refusal(text)
    with pytest.raises(TimeLimitSettingError):
        call_with_time_limit(lambda: 1, what="f")


@pytest.mark.parametrize(("text", "seconds"), [("0.01", MIN_SECONDS), ("1e6", MAX_SECONDS)])
def test_the_ends_of_the_range_are_limits(
    monkeypatch: pytest.MonkeyPatch, text: str, seconds: float
) -> None:
    monkeypatch.setenv(ENV_VAR, text)
    assert limit_seconds() == seconds
    assert call_with_time_limit(lambda: 1, what="f") == 1
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_alarm_before_the_call_starts_is_still_the_time_limit() -> None:
    """A limit so short that the alarm fires as the timer is armed, before the user's
    code starts: once an escaped internal exception, the process then killed by SIGALRM."""
    for _ in range(20):
        with pytest.raises(TimeLimitExceeded):
            call_with_time_limit(_spin, what="f", seconds=1e-300)
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize(
    "command", [["train", "m.yaml"], ["evaluate", "agent.pt"], ["validate", "m.yaml"]]
)
@pytest.mark.parametrize("text", ["abc", "1e-300", "1e300"])
def test_the_cli_refuses_a_bad_limit_setting_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
    text: str,
) -> None:
    from agilerl.cli import main

    monkeypatch.setenv(ENV_VAR, text)
    assert main(command) == 1  # (the files named do not exist: nothing was read)
    assert capsys.readouterr() == ("", f"agilerl: {refusal(text)}\n")


def test_the_agilerl_command_refuses_it_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("agilerl")), "train", "m.yaml", "--out", "run"],
        cwd=tmp_path,
        env={**os.environ, ENV_VAR: "1e300"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"agilerl: {refusal('1e300')}\n"
    assert list(tmp_path.iterdir()) == []
