"""Turning documents into specs, with errors people can act on.

Every problem becomes an :class:`Issue`: the dotted path into the document, the value
found there, what was expected and, for files, the line and column.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

SpecT = TypeVar("SpecT", bound=BaseModel)

#: Maps a path (tuple of keys / indices) to (line, column), both 1-based, or None.
Locator = Callable[[tuple[Any, ...]], "tuple[int, int] | None"]

_MISSING = object()


@dataclass(frozen=True)
class Issue:
    """One problem in a document."""

    path: tuple[Any, ...]
    value: Any
    message: str
    position: tuple[int, int] | None = None

    @property
    def dotted_path(self) -> str:
        """``encoder_config.hidden_size[0]``; ``<root>`` for the document itself."""
        text = ""
        for part in self.path:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
        return text or "<root>"

    def format(self, source: str | None = None) -> str:
        where = ""
        if source is not None:
            where = (
                f"{source}:{self.position[0]}:{self.position[1]}: "
                if self.position
                else f"{source}: "
            )
        found = "" if self.value is _MISSING else f" (found {self.value!r})"
        return f"{where}{self.dotted_path}: {self.message}{found}"


class SpecError(ValueError):
    """A document is not a valid spec; ``issues`` lists every problem at once."""

    def __init__(self, spec_name: str, issues: list[Issue], source: str | None = None) -> None:
        self.spec_name = spec_name
        self.issues = issues
        self.source = source
        lines = "\n".join(f"  {issue.format(source)}" for issue in issues)
        where = f" in {source}" if source else ""
        super().__init__(f"{len(issues)} problem(s) with {spec_name}{where}:\n{lines}")


def _document_path(loc: tuple[Any, ...], data: Any) -> tuple[tuple[Any, ...], Any]:
    """Map a pydantic error location onto the document, and fetch the value there.

    pydantic inserts the tag of a discriminated-union member (``encoder_config.cnn.x``);
    such a segment is not a key of the document, so it is dropped. The last segment is
    kept even when absent: that is a missing field.
    """
    path: list[Any] = []
    node = data
    for index, part in enumerate(loc):
        is_last = index == len(loc) - 1
        if isinstance(node, dict):
            if part in node:
                path.append(part)
                node = node[part]
            elif not is_last:
                continue  # a union tag
            else:
                path.append(part)
                node = _MISSING
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        else:
            path.append(part)
            node = _MISSING
    return tuple(path), node


def _message(error: dict[str, Any]) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown key (not allowed here)"
    return error["msg"]


def issues_from_validation_error(
    error: ValidationError, data: Any, locate: Locator | None = None
) -> list[Issue]:
    """Every pydantic error as an :class:`Issue` with a document path."""
    issues = []
    for item in error.errors(include_url=False):
        path, value = _document_path(tuple(item["loc"]), data)
        issues.append(Issue(path, value, _message(item), locate(path) if locate else None))
    return issues


def parse_spec(
    spec_cls: type[SpecT], data: Any, *, source: str | None = None, locate: Locator | None = None
) -> SpecT:
    """Validate ``data`` into ``spec_cls``; raise :class:`SpecError` listing every problem."""
    try:
        return spec_cls.model_validate(data)
    except ValidationError as error:
        raise SpecError(
            spec_cls.__name__, issues_from_validation_error(error, data, locate), source
        ) from None
