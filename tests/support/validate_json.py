"""``agilerl validate --format json`` as the tests that compare other validators with it
(the Node check, the browser playground) read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import ROOT


def validate_json(*files: Path) -> dict[str, Any]:
    """The report of ``agilerl validate --format json`` on ``files``, keyed by path."""
    result = subprocess.run(
        [sys.executable, "-m", "agilerl", "validate", "--format", "json", *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), f"agilerl validate failed:\n{result.stderr}"
    return json.loads(result.stdout)
