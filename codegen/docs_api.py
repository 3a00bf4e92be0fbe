"""The Python API pages of the documentation: one page per public module, each a
mkdocstrings directive (``::: module``) that renders the module's docstrings when the
site is built.

The module list comes from the package's own tables where it has them (the algorithm
modules of :mod:`agilerl.algorithms`, the training functions of :mod:`agilerl.training`),
so a new algorithm or training function gets its page without an edit here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from codegen.docs_specs import ROOT, SchemaSet, cell, page_name

#: The modules a user imports, in the order the index lists them (before the tables').
CORE_MODULES = (
    "agilerl.models",
    "agilerl.models.manifest",
    "agilerl.models.validation",
    "agilerl.models.registry",
    "agilerl.trainer",
    "agilerl.one_agent",
    "agilerl.evaluation",
    "agilerl.training",
    "agilerl.training.callbacks",
    "agilerl.hpo.mutation",
    "agilerl.hpo.tournament",
    "agilerl.networks",
)


def api_modules() -> list[str]:
    """Every module that gets an API page: the core ones, each algorithm's module and the
    modules holding the base classes (``agilerl.algorithms``' lazy table), and the
    modules defining the training functions (``agilerl.training.ENTRY_POINTS``)."""
    # Both packages import their tables without torch: listing the modules stays light.
    from agilerl import algorithms, training

    found = list(CORE_MODULES)
    for module in (*algorithms._LAZY.values(), *training.ENTRY_POINTS.values()):
        if module not in found:
            found.append(module)
    return found


def module_file(module: str, root: Path = ROOT) -> Path:
    base = root.joinpath(*module.split("."))
    package = base / "__init__.py"
    return package if package.exists() else base.with_suffix(".py")


def summary_line(module: str, root: Path = ROOT) -> str:
    """The first sentence of a module's docstring, read without importing it."""
    tree = ast.parse(module_file(module, root).read_text())
    doc = ast.get_docstring(tree) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    # Sphinx roles (:class:`~a.B`) read as code in Markdown.
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", first)


def api_page(module: str) -> str:
    return f"# `{module}`\n\n::: {module}\n"


def models_page() -> str:
    """``agilerl.models``: its hand-written members from their docstrings; the spec
    classes, which the generator writes from the schemas, link to their spec pages (their
    fields are documented there, from the same source)."""
    import agilerl.models

    titles = {schema.get("title"): file for file, schema in SchemaSet.load().schemas.items()}
    generated = [name for name in agilerl.models.__all__ if name in titles]
    written = [name for name in agilerl.models.__all__ if name not in titles]
    lines = [
        "# `agilerl.models`",
        "",
        "::: agilerl.models",
        "    options:",
        f"      members: [{', '.join(written)}]",
        "",
        "## Spec classes",
        "",
        "Generated from the schemas (`nox -s codegen`); every field, default and rule is on "
        "the class's page of the spec reference. Each takes its fields as keyword "
        "arguments and validates them as a document would be.",
        "",
        "| Class | Spec reference |",
        "|---|---|",
    ]
    lines += [
        f"| `{name}` | [{name}](../specs/{page_name(titles[name])}) |" for name in sorted(generated)
    ]
    return "\n".join(lines) + "\n"


#: Pages made otherwise than by :func:`api_page`.
SPECIAL_PAGES = {"agilerl.models": models_page}


def api_index(modules: list[str]) -> str:
    lines = [
        "# Python API",
        "",
        "Generated from the docstrings when the site is built: one page per public module.",
        "",
        "| Module | Summary |",
        "|---|---|",
    ]
    lines += [f"| [`{m}`]({m}.md) | {cell(summary_line(m))} |" for m in modules]
    return "\n".join(lines) + "\n"


def api_pages(modules: list[str] | None = None) -> dict[str, str]:
    """Every API page by path below ``reference/api/``."""
    modules = modules if modules is not None else api_modules()
    pages = {"index.md": api_index(modules)}
    for module in modules:
        make = SPECIAL_PAGES.get(module)
        pages[f"{module}.md"] = make() if make else api_page(module)
    return pages
