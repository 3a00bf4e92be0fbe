"""Every Python snippet of the README runs as written.

Each ```python block is run in a fresh interpreter, in a scratch directory holding a copy
of ``configs/`` (snippets name ``configs/ppo.yaml`` and write ``runs/``), so a snippet
can neither lean on another's state nor write into the checkout. The blocks are read by
``support.snippets``, as the docs' are (``tests/docs/test_doc_snippets.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from support import ROOT
from support.snippets import Block, blocks


def snippets() -> list[Block]:
    """Every Python block of the README."""
    return blocks(ROOT / "README.md", ("python",))


def test_the_readme_has_python_snippets():
    assert len(snippets()) >= 1


@pytest.mark.parametrize(
    "block",
    # A snippet that trains takes seconds to tens of seconds: slow.
    [pytest.param(b, marks=pytest.mark.slow if b.trains else ()) for b in snippets()],
    ids=[f"line{b.line}" for b in snippets()],
)
def test_readme_snippet_runs_as_written(block, tmp_path):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    script = tmp_path / "snippet.py"
    script.write_text(block.code, encoding="utf-8")
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
    assert result.returncode == 0, f"{block.where}: snippet failed\n{result.stderr[-3000:]}"
