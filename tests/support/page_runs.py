"""Running a docs page's snippets as written: what ``tests/docs/test_doc_snippets.py``
does to every page and ``tests/docs/test_tutorials.py`` to each tutorial's page before
asserting its outcome (one run serves both: a tutorial's trainings run once).

A page's fenced ```python and ```bash blocks run in page order in one fresh interpreter,
in a scratch directory holding copies of ``configs/`` and ``examples/``: Python blocks in
one shared namespace (a later block sees an earlier one's names), bash blocks line by line
(a line ending in ``\\`` continues; comments and blank lines are skipped) with this
interpreter's ``bin`` directory first on ``PATH``, so ``agilerl`` and ``python`` are this
environment's. ``OMP_NUM_THREADS=1`` and ``MPLBACKEND=Agg`` throughout. Blocks whose
every line is a pymdownx.snippets include show a tutorial's files and are not run (the
page's commands run those files). A failure names the page and the line.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from support import MADE_BY_TUTORIALS, ROOT
from support.snippets import Block, blocks

LANGUAGES = ("python", "bash")
#: Where the driver writes each bash command's output, in the scratch directory.
RECORD = ".page_run.json"
#: What every run of a page's commands or a tutorial's files sets: one torch thread,
#: plots to files, W&B offline.
RUN_ENV = {"OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "WANDB_MODE": "offline"}

# Run in the fresh interpreter: the steps come as JSON on stdin, each Python step is
# compiled under the page's name with its page line numbers, so a traceback names them.
# A bash command's stdout and stderr are echoed and recorded.
DRIVER = r"""
import json, subprocess, sys
namespace = {"__name__": "__main__"}
record = []
for kind, page, line, code in json.load(sys.stdin):
    if kind == "python":
        exec(compile("\n" * line + code, page, "exec"), namespace)
        continue
    done = subprocess.run(["bash", "-c", code], capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout)
    sys.stdout.flush()
    sys.stderr.write(done.stderr)
    sys.stderr.flush()
    record.append({"line": line + 1, "code": code, "stdout": done.stdout, "stderr": done.stderr})
    if done.returncode:
        sys.exit(f"{page}:{line + 1}: exit status {done.returncode}: {code}")
with open(sys.argv[1], "w") as f:
    json.dump(record, f)
"""


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


@dataclass(frozen=True)
class PageRun:
    """A page's run: the scratch directory it ran in, and each bash command's stdout and
    stderr."""

    cwd: Path
    commands: list[dict]

    def output(self, fragment: str, stream: str = "stdout") -> str:
        """What the one command whose text contains ``fragment`` wrote to ``stream``."""
        found = [c[stream] for c in self.commands if fragment in c["code"]]
        assert len(found) == 1, f"{len(found)} commands of the page contain {fragment!r}"
        return found[0]


def run_page(page: Path, cwd: Path) -> PageRun:
    """Run ``page``'s snippets as written in ``cwd`` (a scratch directory, given copies of
    ``configs/`` and ``examples/`` as a clone holds them); asserts that every step ran."""
    shutil.copytree(ROOT / "configs", cwd / "configs")
    made = shutil.ignore_patterns(*MADE_BY_TUTORIALS)
    shutil.copytree(ROOT / "examples", cwd / "examples", ignore=made)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        **RUN_ENV,
    }
    result = subprocess.run(
        [sys.executable, "-c", DRIVER, str(cwd / RECORD)],
        input=json.dumps(steps(page)),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert result.returncode == 0, (
        f"{page.relative_to(ROOT)}: a snippet failed\n{result.stdout[-3000:]}\n{result.stderr[-4000:]}"
    )
    return PageRun(cwd, json.loads((cwd / RECORD).read_text()))
