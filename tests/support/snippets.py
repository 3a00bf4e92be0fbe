"""The fenced code blocks of a Markdown page, as the README and docs tests run them.

One reader for both (``tests/test_readme.py``, ``tests/docs/test_doc_snippets.py``), so
a page's blocks mean the same thing wherever they are checked: a fence opens with three
backticks and a language and closes at the next line of three backticks at the same
indentation (a fence inside a list item or an admonition is indented; its text is
dedented by that much); pymdownx.snippets includes are read from the repository
root as the docs build reads them (its ``base_path``), in either form:
``--8<-- "path"`` on one line, or a ``--8<--`` line, one path a line, and a closing
``--8<--`` line. The pages use the block form: ``ruff format`` formats Markdown's Python
blocks and would rewrite the one-line form, which parses as Python (``--8 < --"path"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support import ROOT

_FENCE = re.compile(r"^([ \t]*)```([\w+-]*)[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
#: A one-line pymdownx.snippets include: ``--8<-- "examples/x.py"`` (quotes optional).
INCLUDE = re.compile(r"""^[ \t]*-{2}8<-{2}[ \t]+["']?([^"'\s]+)["']?[ \t]*$""")
#: The marker line that opens and closes a block of includes, one path a line between.
MARKER = re.compile(r"^[ \t]*-{2}8<-{2}[ \t]*$")
#: What a block runs that trains: such a block takes seconds to minutes, so its test is slow.
TRAINS = re.compile(r"\.train\(|train_agent\(|agilerl train\b")


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line its fence opens on (1-based), language, text."""

    page: Path
    line: int
    language: str
    code: str

    @property
    def where(self) -> str:
        """``page:line`` relative to the repository, for failure messages and test ids."""
        try:
            name = self.page.relative_to(ROOT)
        except ValueError:
            name = self.page
        return f"{name}:{self.line}"

    @property
    def only_includes(self) -> bool:
        """Whether the block shows included files and nothing else."""
        parts = _parts(self.code)
        return any(path for path, _ in parts) and all(
            path or not line.strip() for path, line in parts
        )

    @property
    def trains(self) -> bool:
        return bool(TRAINS.search(self.expanded()))

    def includes(self) -> list[Path]:
        return [ROOT / path for path, _ in _parts(self.code) if path is not None]

    def expanded(self) -> str:
        """The block with every include replaced by the file's text (a missing file is an
        error naming the page and line, as the strict docs build refuses it too)."""
        out = []
        for path, line in _parts(self.code):
            if path is None:
                out.append(line)
                continue
            file = ROOT / path
            if not file.is_file():
                raise FileNotFoundError(f"{self.where}: include {path} does not exist")
            out.append(file.read_text(encoding="utf-8").rstrip("\n"))
        return "\n".join(out) + "\n"


def _parts(code: str) -> list[tuple[str | None, str]]:
    """The block's lines as ``(included path, "")`` or ``(None, line)``; the block form's
    markers and the blank lines between them are dropped, as pymdownx drops them."""
    parts: list[tuple[str | None, str]] = []
    in_block = False
    for line in code.splitlines():
        if MARKER.match(line):
            in_block = not in_block
        elif in_block:
            if line.strip():
                parts.append((line.strip().strip("\"'"), ""))
        elif match := INCLUDE.match(line):
            parts.append((match.group(1), ""))
        else:
            parts.append((None, line))
    return parts


def blocks(page: Path, languages: tuple[str, ...]) -> list[Block]:
    """The page's fenced blocks in one of ``languages``, in page order."""
    text = page.read_text(encoding="utf-8")
    return [
        Block(page, text.count("\n", 0, m.start()) + 1, m.group(2), _dedent(m.group(3), m.group(1)))
        for m in _FENCE.finditer(text)
        if m.group(2) in languages
    ]


def _dedent(code: str, indent: str) -> str:
    return "".join(
        line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")
        for line in code.splitlines(keepends=True)
    )
