"""Start an ``agilerl train`` command and kill it (SIGKILL) once its first run checkpoint
exists: the shared set-up of the kill-and-resume tests."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


def kill_at_first_checkpoint(command: list[str], checkpoint: Path, env: dict[str, str]) -> None:
    """Run ``command`` until ``checkpoint`` appears (120 s at most), then SIGKILL it: no
    chance to clean up, mid-generation at best. Fails with the run's stderr if it ended
    or timed out before writing a checkpoint."""
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)
    assert checkpoint.exists(), run.communicate()[1].decode()[-2000:]
    run.send_signal(signal.SIGKILL)
    run.wait()
