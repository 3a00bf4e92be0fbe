"""A manifest with ``--set KEY=VALUE`` overrides applied, validated like the file itself:
what ``agilerl train``, ``agilerl evaluate --manifest`` and ``agilerl dataset collect``
read."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from agilerl.cli.common import CliError
from agilerl.files.documents import DocumentError, load_document, parse_value
from agilerl.models.legacy import LEGACY_KEYS
from agilerl.models.manifest import parse_manifest_with_deprecations
from agilerl.models.validation import SpecError


def _set_path(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    """Put ``value`` at ``path`` in the document, creating missing sections."""
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        if isinstance(node, dict):
            node = node.setdefault(part, {})
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            where = ".".join(map(str, path[: depth + 1]))
            raise ValueError(f"{where} is not a section of the manifest")
    last = path[-1]
    if isinstance(node, dict):
        node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        node[last] = value
    else:
        raise ValueError(f"{'.'.join(map(str, path[:-1]))} is not a section of the manifest")


def _depth_present(data: Any, keys: tuple[Any, ...]) -> int:
    """How many leading parts of ``keys`` the document already has (before a --set)."""
    node = data
    for depth, part in enumerate(keys[:-1]):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            return depth
    return len(keys) - 1


def load_with_overrides(path: str, assignments: list[str]) -> Any:
    """The manifest at ``path`` with ``KEY=VALUE`` overrides (dotted keys, YAML values)
    applied, validated like the file itself. Problems are raised as :class:`CliError`
    lines naming ``file:line:column`` or the ``--set`` they came from."""
    try:
        data, locate = load_document(path)
    except DocumentError as err:
        raise CliError(str(err)) from None
    overridden: dict[tuple[Any, ...], str] = {}
    for item in assignments:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--set {item}: expected KEY=VALUE, e.g. training.max_steps=20000")
        keys = tuple(int(p) if p.isdigit() else p for p in key.strip().split("."))
        # What the --set brings into the document: the value, and every section on its
        # path the file lacked (``a.b.c=1`` on a file without ``a`` brings ``a``).
        brought = keys[: _depth_present(data, keys) + 1]
        try:
            if not isinstance(data, dict):
                raise ValueError("the manifest is not a mapping")
            _set_path(data, keys, parse_value(text))
        except (ValueError, DocumentError) as err:
            raise CliError(f"--set {item}: {err}") from None
        overridden[brought] = item
        for legacy in LEGACY_KEYS:  # the --set replaces the file's value, however spelt
            if keys == legacy.new_path:
                _section_of(data, legacy.section).pop(legacy.old, None)

    def where(issue: Any) -> str:
        """The --set an issue's value came from, else the file."""
        for keys, item in overridden.items():
            if issue.path[: len(keys)] == keys:
                return f"--set {item}"
        return path

    def located(issue: Any) -> Any:  # a value from the command line has no file position
        return issue if where(issue) == path else dataclasses.replace(issue, position=None)

    try:
        manifest, deprecated = parse_manifest_with_deprecations(data, source=path, locate=locate)
    except SpecError as err:
        lines = [f"{len(err.issues)} problem(s) with the manifest {path}:"]
        lines += ["  " + located(issue).format(where(issue)) for issue in err.issues]
        raise CliError("\n".join(lines)) from None
    for issue in deprecated:
        print(f"agilerl: warning: {located(issue).format(where(issue))}", file=sys.stderr)
    return manifest


def _section_of(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The object at ``keys`` of a document (one a --set has just written below)."""
    node = data
    for part in keys:
        node = node[part]
    return node
