"""Every runnable snippet of the docs runs as written, so no page can rot.

Every page under ``docs/`` is found at collection time (pages other branches add are
covered once merged) and run by ``support.page_runs`` (its docstring says how: page
order, one fresh interpreter, a scratch directory with copies of ``configs/`` and
``examples/``). Blocks that only include a tutorial's files are not run; the tutorial
pages themselves (``docs/tutorials/``) run in ``tests/docs/test_tutorials.py``, which
asserts each one's outcome after the same run, so their trainings run once. A page
whose snippets train (``.train(``, ``train_agent(``, ``agilerl train``) is marked
``slow``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT
from support.page_runs import bash_lines, run_page, runnable
from support.snippets import Block

DOCS = ROOT / "docs"
#: Run with their outcomes asserted by tests/docs/test_tutorials.py.
TUTORIAL_PAGES = DOCS / "tutorials"


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else []


RUNNABLE = [p for p in pages() if runnable(p) and p.parent != TUTORIAL_PAGES]


def test_the_pages_here_and_the_tutorial_pages_have_runnable_snippets():
    assert RUNNABLE and all(runnable(p) for p in TUTORIAL_PAGES.glob("*.md") if p.stem != "index")


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
    run_page(page, tmp_path)
