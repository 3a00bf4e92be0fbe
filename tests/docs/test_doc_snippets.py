"""Every runnable snippet of the docs runs as written, so no page can rot.

Every page under ``docs/`` is found at collection time (pages other branches add are
covered once merged). Its fenced ```python and ```bash blocks run in page order in one
fresh interpreter, in a scratch directory holding copies of ``configs/`` and
``examples/``: Python blocks are executed in one shared namespace (a later block sees an
earlier one's names), bash blocks line by line (a line ending in ``\\`` continues; comments
and blank lines are skipped) with this interpreter's ``bin`` directory first on ``PATH``,
so ``agilerl`` and ``python`` are this environment's. ``OMP_NUM_THREADS=1`` and
``MPLBACKEND=Agg`` throughout. A failure names the page and the line.

Blocks whose every line is a pymdownx.snippets include (``--8<-- "examples/..."``) are
skipped here: they show a tutorial's files, which ``tests/docs/test_tutorials.py`` runs
with outcomes asserted; an include inside a block with other lines is expanded as the
docs build expands it. Any other fence (```yaml, ```text, ```console, ```sh) is shown,
never run. A page whose snippets train (``.train(``, ``train_agent(``, ``agilerl train``)
is marked ``slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import MADE_BY_TUTORIALS, ROOT
from support.snippets import Block, blocks

DOCS = ROOT / "docs"
LANGUAGES = ("python", "bash")

# Run in the fresh interpreter: the steps come as JSON on stdin, each Python step is
# compiled under the page's name with its page line numbers, so a traceback names them.
DRIVER = r"""
import json, os, subprocess, sys
namespace = {"__name__": "__main__"}
for kind, page, line, code in json.load(sys.stdin):
    if kind == "python":
        exec(compile("\n" * line + code, page, "exec"), namespace)
        continue
    done = subprocess.run(["bash", "-c", code], check=False)
    if done.returncode:
        sys.exit(f"{page}:{line + 1}: exit status {done.returncode}: {code}")
"""


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else []


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks(page, LANGUAGES) if not b.only_includes]


def bash_lines(block: Block) -> list[tuple[int, str]]:
    """``(0-based line in the block, command)`` of a bash block, continuations joined."""
    commands: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(block.expanded().splitlines()):
        if pending is not None:
            start, text = pending
            text = text + " " + line.strip()
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        else:
            start, text = number, line.strip()
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip())
            continue
        pending = None
        commands.append((start, text))
    return commands


def steps(page: Path) -> list[tuple[str, str, int, str]]:
    """What the driver runs: ``(kind, page name, line before the code, code)``."""
    name = str(page.relative_to(ROOT))
    out: list[tuple[str, str, int, str]] = []
    for block in runnable(page):
        if block.language == "python":
            out.append(("python", name, block.line, block.expanded()))
        else:
            out.extend(("bash", name, block.line + n, cmd) for n, cmd in bash_lines(block))
    return out


RUNNABLE = [p for p in pages() if runnable(p)]


def test_the_tutorials_have_runnable_snippets():
    assert any("tutorials" in p.parts for p in RUNNABLE)


def test_includes_in_either_form_are_read_as_pymdownx_reads_them():
    one_line = Block(DOCS / "x.md", 1, "python", '--8<-- "examples/q_network.yaml"\n')
    block_form = Block(DOCS / "x.md", 1, "python", "--8<--\nexamples/q_network.yaml\n--8<--\n")
    mixed = Block(DOCS / "x.md", 1, "python", "x = 1\n--8<--\nexamples/q_network.yaml\n--8<--\n")
    text = (ROOT / "examples/q_network.yaml").read_text(encoding="utf-8")
    assert one_line.only_includes and block_form.only_includes and not mixed.only_includes
    assert one_line.expanded() == block_form.expanded() == text
    assert mixed.expanded() == "x = 1\n" + text
    with pytest.raises(FileNotFoundError, match="x.md:1: include nowhere.py does not exist"):
        Block(DOCS / "x.md", 1, "python", "--8<--\nnowhere.py\n--8<--\n").expanded()


def test_bash_continuations_and_comments_are_read_as_a_shell_would():
    block = Block(
        DOCS / "x.md", 3, "bash", "# a comment\nagilerl train m.yaml \\\n  --out r\n\necho done\n"
    )
    assert bash_lines(block) == [(1, "agilerl train m.yaml --out r"), (4, "echo done")]


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(p, marks=pytest.mark.slow if any(b.trains for b in runnable(p)) else ())
        for p in RUNNABLE
    ],
    ids=[str(p.relative_to(DOCS)) for p in RUNNABLE],
)
def test_page_snippets_run_as_written(page, tmp_path):
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    made = shutil.ignore_patterns(*MADE_BY_TUTORIALS)
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=made)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "OMP_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "WANDB_MODE": "offline",
    }
    result = subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=json.dumps(steps(page)),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, (
        f"{page.relative_to(ROOT)}: a snippet failed\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    )
