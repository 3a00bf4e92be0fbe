"""Run a trainer's few lines in a Python process of their own that ends itself
(``os._exit``) while its vector-env workers live: the shared set-up of the tests that the
workers then end quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: tests/, so that the test module ``code`` imports finds ``support`` as pytest does.
TESTS = Path(__file__).resolve().parents[1]


def run_and_end(code: str, tests_dir: Path, tmp_path: Path) -> tuple[int, str]:
    """The exit status and stderr of ``python -c code tests_dir tmp_path`` (``code``
    imports its helpers from ``tests_dir``, ``sys.argv[1]``); it returns once every
    worker has closed its stderr, the pipe they share."""
    path = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-c", code, str(tests_dir), str(tmp_path)],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    return result.returncode, result.stderr


def the_one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one ``agilerl:`` line of a refused command (exit status 1), which printed no
    traceback, neither the trainer's nor a worker's."""
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("agilerl:")]
    assert len(lines) == 1, result.stderr
    return lines[0]
