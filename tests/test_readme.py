"""Every Python snippet of the README runs as written.

Each ```python block is run in a fresh interpreter, in a scratch directory holding a copy
of ``configs/`` (snippets name ``configs/ppo.yaml`` and write ``runs/``), so a snippet
can neither lean on another's state nor write into the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
from support import ROOT

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets() -> list[tuple[int, str]]:
    """``(line, code)`` of every Python block of the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def test_the_readme_has_python_snippets():
    assert len(snippets()) >= 1


@pytest.mark.parametrize(
    ("line", "code"),
    # A snippet that trains takes seconds to tens of seconds: slow.
    [
        pytest.param(
            *s, marks=pytest.mark.slow if re.search(r"\.train\(|train_agent\(", s[1]) else ()
        )
        for s in snippets()
    ],
    ids=[f"line{n}" for n, _ in snippets()],
)
def test_readme_snippet_runs_as_written(line, code, tmp_path):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, f"README.md:{line}: snippet failed\n{result.stderr[-3000:]}"
