"""Turning documents into specs, with errors people can act on.

Every problem becomes an :class:`Issue`: the dotted path into the document, the value
found there, what was expected and, for files, the line and column.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

SpecT = TypeVar("SpecT", bound=BaseModel)

#: Maps a path (tuple of keys / indices) to (line, column), both 1-based, or None.
Locator = Callable[[tuple[Any, ...]], "tuple[int, int] | None"]

_MISSING = object()

#: Values in messages are shortened: a document can hold megabytes (an alias bomb printed
#: whole made an 80 MB error); reprlib never builds the full repr.
_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxlist = _SHORT.maxdict = 10
_SHORT.maxstring = _SHORT.maxother = 80


def short_repr(value: Any) -> str:
    """``repr(value)``, shortened with ``...`` past a few items, levels or characters."""
    text = _SHORT.repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


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
        found = "" if self.value is _MISSING else f" (found {short_repr(self.value)})"
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


#: Keys the reference implementation accepted under another name; the hint names ours.
RENAMED_KEYS = {
    "memory_size": "max_size",
    "tournament_selection": "selection_strategy",
    "population_size": "pop_size",
    "metrics_interval": "evo_steps",
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold (through unions, lists, dicts...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    value = getattr(annotation, "__value__", None)  # a TypeAliasType
    args = get_args(value if value is not None else annotation)
    return [model for arg in args for model in _models_in(arg)]


def known_keys(spec_cls: type[BaseModel], data: Any, path: tuple[Any, ...]) -> list[str]:
    """Keys allowed in the object at ``path`` of a ``spec_cls`` document (best effort)."""
    classes: list[type[BaseModel]] = [spec_cls]
    node = data
    for part in path:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
            continue
        nxt: list[type[BaseModel]] = []
        for cls in classes:
            chosen = getattr(cls, "section_class", lambda *_: None)(part, data)
            if chosen is not None:
                nxt.append(chosen)
            elif part in cls.model_fields:
                nxt += _models_in(cls.model_fields[part].annotation)
        node = node.get(part) if isinstance(node, dict) else None
        tag = node.get("arch") if isinstance(node, dict) else None
        tagged = [
            c for c in nxt if "arch" in c.model_fields and c.model_fields["arch"].default == tag
        ]
        classes = tagged or nxt
    return sorted({key for cls in classes for key in cls.model_fields})


def _unknown_key_message(key: Any, known: list[str]) -> str:
    if key in RENAMED_KEYS and RENAMED_KEYS[key] in known:
        return f"unknown key (renamed: use {RENAMED_KEYS[key]!r})"
    close = difflib.get_close_matches(str(key), [k for k in known if k != key], n=1, cutoff=0.6)
    return (
        f"unknown key (did you mean {close[0]!r}?)" if close else "unknown key (not allowed here)"
    )


def issues_from_validation_error(
    error: ValidationError,
    data: Any,
    locate: Locator | None = None,
    spec_cls: type[BaseModel] | None = None,
) -> list[Issue]:
    """Every pydantic error as an :class:`Issue` with a document path."""
    issues = []
    for item in error.errors(include_url=False):
        path, value = _document_path(tuple(item["loc"]), data)
        if item["type"] == "missing":
            message = "required field is missing"
        elif item["type"] == "extra_forbidden":
            known = known_keys(spec_cls, data, path[:-1]) if spec_cls else []
            message = _unknown_key_message(path[-1], known)
        else:
            message = item["msg"]
        issues.append(Issue(path, value, message, locate(path) if locate else None))
    return issues


def parse_spec(
    spec_cls: type[SpecT], data: Any, *, source: str | None = None, locate: Locator | None = None
) -> SpecT:
    """Validate ``data`` into ``spec_cls``; raise :class:`SpecError` listing every problem."""
    try:
        return spec_cls.model_validate(data)
    except ValidationError as error:
        issues = issues_from_validation_error(error, data, locate, spec_cls)
        raise SpecError(spec_cls.__name__, issues, source) from None
