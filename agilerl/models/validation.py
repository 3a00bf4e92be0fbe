"""Turning documents into specs, with errors people can act on.

Every problem becomes an :class:`Issue`: the dotted path into the document, the value
found there, what was expected and, for files, the line and column.
"""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agilerl.models.one_pass import Shape, shape_of

SpecT = TypeVar("SpecT", bound=BaseModel)

#: Maps a path (tuple of keys / indices) to (line, column), both 1-based, or None.
Locator = Callable[[tuple[Any, ...]], "tuple[int, int] | None"]

_MISSING = object()
#: The value of an :class:`Issue` whose message says all (no "(found ...)" after it).
NOT_SHOWN = _MISSING

#: Values in messages are shortened: a document can hold megabytes (an alias bomb printed
#: whole made an 80 MB error); reprlib never builds the full repr.
_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxlist = _SHORT.maxdict = 10
_SHORT.maxstring = _SHORT.maxother = 80


def short_repr(value: object) -> str:
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


def _shapes_below(shapes: list[Shape], node: Any, part: Any) -> list[Shape]:
    """The shapes of what ``node[part]`` can hold, ``node`` having one of ``shapes``."""
    found = []
    for shape in shapes:
        if isinstance(part, int):
            found += [shape.items] if shape.items is not None else []
            continue
        if shape.values is not None:  # a map: ``part`` is one of its keys
            found.append(shape.values)
        chosen = shape.model_for(node) if isinstance(node, dict) else None
        for model in [chosen] if chosen else shape.models:
            info = model.model_fields.get(part)
            below = info and shape_of(info.annotation, getattr(info, "discriminator", None))
            found += [below] if below else []
    return found


def known_keys(spec_cls: type[BaseModel], data: Any, path: tuple[Any, ...]) -> list[str]:
    """Keys allowed in the object at ``path`` of a ``spec_cls`` document (best effort):
    through nested specs, lists, maps, tagged unions and the sections that depend on
    other parts of the document (``section_class``)."""
    shapes = [Shape(models=(spec_cls,))]
    node = data
    section_class = getattr(spec_cls, "section_class", None)
    for depth, part in enumerate(path):
        chosen = section_class(path[: depth + 1], data) if section_class else None
        shapes = [Shape(models=(chosen,))] if chosen else _shapes_below(shapes, node, part)
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    classes = set()
    for shape in shapes:
        chosen = shape.model_for(node) if isinstance(node, dict) else None
        classes.update([chosen] if chosen else shape.models)
    return sorted({key for cls in classes for key in cls.model_fields})


def _intended_key(key: object, known: list[str]) -> tuple[str | None, str]:
    """The key an unknown ``key`` probably meant, and how the message names it."""
    close = difflib.get_close_matches(str(key), [k for k in known if k != key], n=1, cutoff=0.6)
    return (close[0], "did you mean {!r}?") if close else (None, "not allowed here")


def _unknown_key_message(
    key: Any, known: list[str], missing: AbstractSet[object] = frozenset()
) -> str:
    """ "unknown key (did you mean 'x'?)", saying so when 'x' is required and missing."""
    intended, hint = _intended_key(key, known)
    text = hint.format(intended)
    if intended is not None and intended in missing:
        text += (
            " it is required and missing" if text.endswith("?") else "; it is required and missing"
        )
    return f"unknown key ({text})"


def issues_from_validation_error(
    error: ValidationError,
    data: Any,
    locate: Locator | None = None,
    spec_cls: type[BaseModel] | None = None,
) -> list[Issue]:
    """Every pydantic error as an :class:`Issue` with a document path.

    An unknown key that is a misspelling of a required key reported missing in the same
    object gives one issue, at the unknown key, instead of two.
    """
    items = [
        (item, *_document_path(tuple(item["loc"]), data))
        for item in error.errors(include_url=False)
    ]
    missing = {path for item, path, _ in items if item["type"] == "missing"}
    issues, merged = [], set()
    for item, path, value in items:
        if item["type"] == "extra_forbidden":
            known = known_keys(spec_cls, data, path[:-1]) if spec_cls else []
            absent = {p[-1] for p in missing if p[:-1] == path[:-1]}
            message = _unknown_key_message(path[-1], known, absent)
            intended = _intended_key(path[-1], known)[0]
            if intended in absent:  # one issue says both: drop the "missing" one
                merged.add((*path[:-1], intended))
        else:
            message = "required field is missing" if item["type"] == "missing" else item["msg"]
        issues.append(Issue(path, value, message, locate(path) if locate else None))
    return [
        i for i in issues if not (i.message == "required field is missing" and i.path in merged)
    ]


def parse_spec(
    spec_cls: type[SpecT], data: Any, *, source: str | None = None, locate: Locator | None = None
) -> SpecT:
    """Validate ``data`` into ``spec_cls``; raise :class:`SpecError` listing every problem."""
    try:
        return spec_cls.model_validate(data)
    except ValidationError as error:
        issues = issues_from_validation_error(error, data, locate, spec_cls)
        raise SpecError(spec_cls.__name__, issues, source) from None
