"""The fenced code blocks of a Markdown page, as the README and docs tests run them.

One reader for both (``tests/test_readme.py``, ``tests/docs/test_doc_snippets.py``), so
a page's blocks mean the same thing wherever they are checked: a fence opens with three
backticks and a language and closes at the next line of three backticks at the same
indentation (a fence inside a list item or an admonition is indented; its text is
dedented by that much); ``--8<-- "path"`` lines are pymdownx.snippets includes, read from the
repository root as the docs build reads them (its ``base_path``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support import ROOT

_FENCE = re.compile(r"^([ \t]*)```([\w+-]*)[^\n]*\n(.*?)^\1```[ \t]*$", re.S | re.M)
#: A pymdownx.snippets include: ``--8<-- "examples/x.py"`` (quotes optional).
INCLUDE = re.compile(r"""^[ \t]*-{2}8<-{2}[ \t]+["']?([^"'\s]+)["']?[ \t]*$""", re.M)
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
        """Whether every non-blank line is an include (the block shows files, nothing else)."""
        lines = [line for line in self.code.splitlines() if line.strip()]
        return bool(lines) and all(INCLUDE.match(line) for line in lines)

    @property
    def trains(self) -> bool:
        return bool(TRAINS.search(self.expanded()))

    def includes(self) -> list[Path]:
        return [ROOT / m.group(1) for m in INCLUDE.finditer(self.code)]

    def expanded(self) -> str:
        """The block with every include replaced by the file's text (a missing file is an
        error naming the page and line, as the strict docs build refuses it too)."""

        def read(match: re.Match[str]) -> str:
            path = ROOT / match.group(1)
            if not path.is_file():
                raise FileNotFoundError(f"{self.where}: include {match.group(1)} does not exist")
            return path.read_text(encoding="utf-8").rstrip("\n")

        return INCLUDE.sub(read, self.code)


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
