"""Reading YAML/JSON documents in the project's one dialect, bounded, with positions.

The dialect (docs/concepts/manifests.md, "One YAML dialect"; ``codegen/node/documents.mjs`` is its Node
twin and tests/files/test_documents.py holds the two to the same trees and verdicts):

- YAML 1.2 core schema: ``true``/``false``, ``null``/``~``/empty, decimal, ``0o`` and
  ``0x`` integers, floats, ``.inf``/``.nan``; ``yes``/``no``/``on``/``off``, dates,
  ``0b101`` and ``-0x10`` stay strings;
- plus ``_`` digit separators: one ``_`` between two digits of an integer or of a
  float's digits before its exponent (``1_000_000``, ``0.000_1``); ``_1``, ``1_``,
  ``1__0`` and ``1e1_0`` are strings;
- explicit core tags on scalars (``!!str``, ``!!int``, ``!!float``, ``!!bool``,
  ``!!null``) and ``<<`` merge keys; any other tag, on a scalar or a collection, is
  refused;
- mapping keys are strings, as in JSON: a key is the text it is written with (``1: a``
  has the key ``"1"``); a collection or an alias as a key is refused.

Loading is bounded (docs/concepts/safety.md, "Loading limits"): at most :data:`MAX_DOCUMENT_BYTES`
bytes of UTF-8 text, :data:`MAX_ALIAS_NODES` nodes produced through aliases,
:data:`MAX_DEPTH` levels of nesting, and no number JSON cannot carry (infinity, NaN,
``1e400``). Parsing is libyaml's (PyYAML's C parser, linear in the size); the values
are built here, from its events, under the rules above. Positions for error messages
are computed only when one is asked for.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from yaml import CSafeDumper, MarkedYAMLError
from yaml import dump as yaml_dump
from yaml._yaml import CParser
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.reader import ReaderError

from agilerl.models.validation import Issue, SpecError, parse_spec, short_repr

#: A document larger than this is refused before it is read (manifests are a few KB).
MAX_DOCUMENT_BYTES = 1 << 20
#: Nodes (scalars, keys included, and collections) that aliases may add to a document.
MAX_ALIAS_NODES = 10_000
#: Collections nested deeper than this are refused (a manifest nests about 5 deep).
MAX_DEPTH = 100


class DocumentError(ValueError):
    """A file that cannot be read as a YAML/JSON document."""


class _Problem(Exception):
    """A problem at a position of the text; the caller adds the file name."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message, self.mark = message, mark


# --- Scalars ----------------------------------------------------------------------------

_DIGITS = "[0-9]+(?:_[0-9]+)*"
#: Numbers of the dialect, one group per kind (``lastgroup`` names the kind).
_NUMBER = re.compile(
    rf"(?P<int>[-+]?{_DIGITS})|0o(?P<octal>[0-7]+(?:_[0-7]+)*)"
    rf"|0x(?P<hex>[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)"
    rf"|(?P<float>[-+]?(?:\.{_DIGITS}|{_DIGITS}(?:\.(?:{_DIGITS})?)?)(?:[eE][-+]?[0-9]+)?)"
)
_BASES = {"int": 10, "octal": 8, "hex": 16}
_NAMED_FLOATS = {
    **{f"{sign}.{name}": math.inf for sign in ("", "+") for name in ("inf", "Inf", "INF")},
    **{f"-.{name}": -math.inf for name in ("inf", "Inf", "INF")},
    **{f".{name}": math.nan for name in ("nan", "NaN", "NAN")},
}
_NULLS = frozenset(["", "~", "null", "Null", "NULL"])
_BOOLS = {text: text[0] in "tT" for text in ("true", "True", "TRUE", "false", "False", "FALSE")}
#: Plain scalars that do not start like a number: null, a boolean, or themselves.
_WORDS: dict[str, Any] = {**dict.fromkeys(_NULLS), **_BOOLS}
_NUMBER_START = frozenset("-+.0123456789")
_STR = "tag:yaml.org,2002:str"


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:40] + "..."


def _not_finite(text: str) -> ValueError:
    return ValueError(f"{_short(text)!r} is not a finite number (JSON has no infinity or NaN)")


#: Without ``_``, a text of these characters reads the same in Python's ``int``/``float``
#: as in the dialect (their grammars agree on them): the fast path of :func:`_number`.
_DECIMAL_CHARS = frozenset("0123456789.eE+-")


def _number(text: str) -> int | float | None:
    """The number ``text`` is in the dialect, or None if it is not one. JSON has no
    infinity or NaN: ``.inf``, ``.nan`` and numbers beyond a float raise ValueError."""
    if len(text) <= 300 and _DECIMAL_CHARS.issuperset(text):  # 128, 0.99, 6.3e-4
        if text.isdigit() or (text[1:].isdigit() and text[0] in "+-"):
            return int(text)
        try:
            value = float(text)
        except ValueError:
            return None
        if math.isinf(value):
            raise _not_finite(text)
        return value
    match = _NUMBER.fullmatch(text)
    if match is None:
        if text in _NAMED_FLOATS:
            raise _not_finite(text)
        return None
    kind = match.lastgroup
    assert kind is not None  # every alternative of _NUMBER is a named group
    digits = match.group(kind).replace("_", "")
    if kind == "float":
        value = float(digits)
        if not math.isfinite(value):
            raise _not_finite(text)
        return value
    if len(digits) > 300:  # beyond what every int below 1e300 needs: check it fits a float
        try:
            float(int(digits, _BASES[kind]))
        except (OverflowError, ValueError):
            raise _not_finite(text) from None
    return int(digits, _BASES[kind])


def _explicit(name: str, accepts: Callable[[Any], bool], convert: Callable[[Any], Any]) -> Any:
    """The reader of an explicit number tag: a number of the dialect ``accepts`` takes."""

    def read(text: str) -> Any:
        value = _number(text)
        if value is None or not accepts(value):
            raise ValueError(f"{_short(text)!r} is not a valid {name}")
        return convert(value)

    return read


def _table(table: dict[str, Any], name: str) -> Callable[[str], Any]:
    def read(text: str) -> Any:
        if text not in table:
            raise ValueError(f"{_short(text)!r} is not a valid {name}")
        return table[text]

    return read


#: Explicit tags a scalar may carry, and how each reads the scalar's text.
_SCALAR_TAGS: dict[str, Callable[[str], Any]] = {
    "!": str,  # the non-specific tag: a string, as YAML says
    _STR: str,
    "tag:yaml.org,2002:int": _explicit("int", lambda value: type(value) is int, int),
    "tag:yaml.org,2002:float": _explicit("float", lambda value: True, float),
    "tag:yaml.org,2002:bool": _table(_BOOLS, "bool"),
    "tag:yaml.org,2002:null": _table(dict.fromkeys(_NULLS), "null"),
}
#: Explicit tags a collection may carry (they say what it already is).
_COLLECTION_TAGS = {
    SequenceStartEvent: {None, "!", "tag:yaml.org,2002:seq"},
    MappingStartEvent: {None, "!", "tag:yaml.org,2002:map"},
}


def _plain(text: str) -> Any:
    """A plain (unquoted, untagged) scalar's value in the dialect."""
    if text[:1] in _NUMBER_START:
        value = _number(text)
        return text if value is None else value
    return _WORDS.get(text, text)


# --- Building values from libyaml's events -----------------------------------------------

#: The plain key ``<<``: its value's entries are merged into the mapping.
_MERGE = object()
_NO_KEY = object()


class _Collection:
    """What the builder keeps of an open sequence or mapping besides the container."""

    __slots__ = ("anchor", "mark", "start", "merged")

    def __init__(self, anchor: str | None, mark: Any, start: int) -> None:
        self.anchor, self.mark, self.start = anchor, mark, start
        self.merged: list[dict] = []

    def merge(self, value: Any, mark: Any) -> None:
        sources = value if type(value) is list else [value]
        if not all(type(source) is dict for source in sources):
            raise _Problem("a merge key (<<) takes a mapping or a list of mappings", mark)
        self.merged += sources

    def finish(self, container: Any) -> Any:
        if not self.merged:
            return container
        merged: dict = {}
        for source in self.merged:  # the first mapping that has a key gives its value
            for key, value in source.items():
                merged.setdefault(key, value)
        return merged | container  # explicit keys win over merged ones


def _copy(value: Any) -> Any:
    """A fresh tree for each alias: documents are trees, as JSON is."""
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    if type(value) is list:
        return [_copy(item) for item in value]
    return value


def _tagged(tag: str, text: str) -> Any:
    """A scalar with an explicit tag: only the core tags of JSON values."""
    if tag not in _SCALAR_TAGS:
        raise _unsupported(tag)
    return _SCALAR_TAGS[tag](text)


def _unsupported(tag: str) -> ValueError:
    return ValueError(f"unsupported YAML tag {tag!r} (JSON values only)")


def _is_open(anchor: str, frame: _Collection | None, stack: list[tuple[Any, ...]]) -> bool:
    """Whether ``anchor`` names a collection still being built (an alias inside it)."""
    frames = [frame, *(entry[4] for entry in stack)]
    return any(open_ is not None and open_.anchor == anchor for open_ in frames)


def _build(source: str | bytes) -> Any:
    """The one document in ``text``; raises :class:`_Problem` (or a libyaml error).

    One pass over libyaml's events. It is most of a manifest's load time, so the open
    collection lives in local variables (``container``, ``is_list``, ``key``) and the
    enclosing ones on ``stack``. ``produced`` counts the nodes built so far, aliases
    expanded: a collection's size is the difference across it."""
    parser = CParser(source)
    next_event = parser.get_event
    stack: list[tuple[Any, ...]] = []
    container: Any = None
    is_list, key, key_mark = False, _NO_KEY, None
    frame: _Collection | None = None
    anchors: dict[str, tuple[Any, int]] = {}
    produced, aliased, documents, result = 0, 0, 0, None
    text = ""  # the last scalar's text (what an anchored ``<<`` names)
    try:
        while True:
            # Dispatched on its exact class (``kind is ScalarEvent``: faster than isinstance
            # in this hottest loop), which type checkers cannot narrow ``event`` by.
            event: Any = next_event()
            kind = type(event)
            if kind is ScalarEvent:
                produced += 1
                size, anchor, text = 1, event.anchor, event.value
                try:
                    if key is _NO_KEY and type(container) is dict:
                        # JSON keys are strings: a key is the text it is written with.
                        if event.tag is not None and event.tag not in _SCALAR_TAGS:
                            raise _unsupported(event.tag)
                        plain = event.tag is None and event.implicit[0]
                        value = _MERGE if text == "<<" and plain else text
                    elif event.tag is not None:
                        value = _tagged(event.tag, text)
                    elif not event.implicit[0]:
                        value = text  # quoted or a block scalar: a string
                    elif text[:1] not in _NUMBER_START:
                        value = _WORDS.get(text, text)
                    else:
                        value = _number(text)
                        if value is None:
                            value = text
                except ValueError as err:
                    raise _Problem(str(err), event.start_mark) from None
                mark = event.start_mark
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.tag not in _COLLECTION_TAGS[kind]:
                    raise _Problem(str(_unsupported(event.tag)), event.start_mark)
                if len(stack) >= MAX_DEPTH:
                    message = f"nested more than {MAX_DEPTH} levels deep"
                    raise _Problem(message, event.start_mark)
                stack.append((container, is_list, key, key_mark, frame))
                frame = _Collection(event.anchor, event.start_mark, produced)
                produced += 1
                is_list = kind is SequenceStartEvent
                container, key = ([] if is_list else {}), _NO_KEY
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                assert frame is not None  # libyaml ends only the collections it started
                value, size = frame.finish(container), produced - frame.start
                anchor, mark = frame.anchor, frame.mark
                container, is_list, key, key_mark, frame = stack.pop()
            elif kind is AliasEvent:
                name, anchor, mark = event.anchor, None, event.start_mark
                if key is _NO_KEY and type(container) is dict:
                    raise _Problem(f"alias *{name} as a mapping key (JSON keys are strings)", mark)
                if _is_open(name, frame, stack):
                    raise _Problem(f"alias *{name} is inside the node it names", mark)
                if name not in anchors:
                    raise _Problem(f"alias *{name} has no anchor before it", mark)
                value, size = anchors[name]
                aliased += size
                produced += size
                if aliased > MAX_ALIAS_NODES:
                    message = f"aliases expand to more than {MAX_ALIAS_NODES} nodes (the limit of a document)"
                    raise _Problem(message, mark)
                value = _copy(value)
            elif kind is DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Problem("more than one document (JSON has one)", event.start_mark)
                continue
            elif kind is StreamEndEvent:
                return result
            else:
                continue
            if anchor is not None:  # (an anchored ``<<`` names its text)
                anchors[anchor] = (text if value is _MERGE else value, size)
            if container is None:
                result = value
            elif is_list:
                # A list, as is_list says: the checker cannot tie the two locals together
                # (a flag, not a type test, in the loop that is most of the load time).
                container.append(value)  # pyright: ignore[reportAttributeAccessIssue]
            elif key is _NO_KEY:
                if type(value) is dict or type(value) is list:
                    message = "a mapping key must be a scalar (JSON keys are strings)"
                    raise _Problem(message, mark)
                key, key_mark = value, mark
            else:
                if key is _MERGE:
                    assert frame is not None  # a key is read inside an open mapping
                    frame.merge(value, mark)
                elif key in container:
                    raise _Problem(f"duplicate key {short_repr(key)}", key_mark)
                else:
                    container[key] = value
                key = _NO_KEY
    finally:
        parser.dispose()


def _position(mark: Any) -> str:
    return f"{mark.line + 1}:{mark.column + 1}"


class _Mark:
    """A position (0-based line and column, as libyaml's marks) of a character offset."""

    def __init__(self, text: str | bytes, offset: int) -> None:
        head = text[:offset]
        newline = "\n" if isinstance(head, str) else b"\n"
        self.line = head.count(newline)  # type: ignore[arg-type]
        self.column = offset - (head.rfind(newline) + 1)  # type: ignore[arg-type]


def _load(text: str | bytes) -> Any:
    """``text``'s value; a :class:`_Problem` for anything the dialect refuses."""
    try:
        return _build(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise _Problem(f"not valid YAML: {err.problem or err.context}", mark) from None
    except ReaderError as err:  # a character YAML does not allow (NUL, other controls)
        code = err.character if isinstance(err.character, int) else ord(err.character)
        message = f"not valid YAML: character U+{code:04X} is not allowed ({err.reason})"
        raise _Problem(message, _Mark(text, err.position)) from None


# --- Positions, on demand ---------------------------------------------------------------


def _locator(text: str) -> Callable[[tuple[Any, ...]], tuple[int, int] | None]:
    """``locate(path)``: 1-based (line, column) of the value (a mapping's key) at a
    document path, or of its closest existing parent. libyaml composes the text again
    on the first call only: most documents are valid and never ask."""
    composed: list[Any] = []

    def locate(doc_path: tuple[Any, ...]) -> tuple[int, int] | None:
        if not composed:
            parser = _Composer(text)
            try:
                composed.append(parser.get_single_node())
            finally:
                parser.dispose()
        node, position = composed[0], (1, 1)
        for part in doc_path:
            child = mark = None
            if node is not None and node.id == "mapping":
                for key, value in node.value:
                    if key.id == "scalar" and key.value == part:  # keys are their text
                        child, mark = value, key.start_mark
            elif node is not None and node.id == "sequence" and isinstance(part, int):
                if 0 <= part < len(node.value):
                    child = node.value[part]
                    mark = child.start_mark
            if child is None or mark is None:  # (set together)
                break
            node, position = child, (mark.line + 1, mark.column + 1)
        return position

    return locate


class _Composer(CParser):
    """libyaml's composer (a node graph with marks); tags are not needed to find keys."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        return _STR

    def descend_resolver(self, parent: Any, index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


# --- Public API -------------------------------------------------------------------------


# Opening a file that is read whole: only a regular one. A FIFO with no writer (or a
# terminal) would block its reader forever, and a device or a directory has no size to
# bound a read by. The file is opened without blocking (opening a FIFO waits for a writer
# otherwise) and its kind checked on the open descriptor, so nothing can swap it between
# the check and the read. Checkpoints are opened the same way, and word the refusal for
# their own file.
#: What a file that is not a regular one is, by ``stat`` mode test (for a refusal).
FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFile(Exception):
    """The path names something other than a regular file; ``kind`` says what (None
    where :data:`FILE_KINDS` does not know it)."""

    def __init__(self, kind: str | None) -> None:
        super().__init__(kind or "not a regular file")
        self.kind = kind


def open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``; the
    caller closes it. :class:`NotRegularFile` (nothing left open) for any other kind;
    ``os.open``'s ``OSError`` passes through."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(next((name for test, name in FILE_KINDS if test(info.st_mode)), None))
    return fd, info


def _read(path: str | Path) -> bytes:
    """The file's bytes, refusing one over the size limit before reading it whole.

    Only regular files are read (:func:`open_regular`)."""
    try:
        fd, info = open_regular(path)
    except NotRegularFile as err:
        kind = err.kind or "not a file"
        raise DocumentError(f"{path}: not a regular file ({kind}); nothing was read") from None
    except OSError as err:
        raise DocumentError(f"{path}: cannot read: {err.strerror}") from None
    try:
        size = info.st_size
        data = os.read(fd, size + 1) if size <= MAX_DOCUMENT_BYTES else b""
    except OSError as err:
        raise DocumentError(f"{path}: cannot read: {err.strerror}") from None
    finally:
        os.close(fd)
    size = max(size, len(data))  # a file that grew since fstat
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentError(
            f"{path}: larger than the {MAX_DOCUMENT_BYTES} bytes a document may have"
            f" ({size} bytes or more)"
        )
    return data


def load_document(path: str | Path) -> tuple[Any, Any]:
    """Load a YAML 1.2 (or JSON) file: ``(data, locate)``.

    ``locate(path_tuple)`` returns the 1-based ``(line, column)`` of the value (or key)
    at a document path, or of its closest existing parent.
    """
    data = _read(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DocumentError(
            f"{path}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start})"
        ) from None
    try:
        return _load(text), _locator(text)
    except _Problem as problem:
        where = f"{path}:{_position(problem.mark)}" if problem.mark else str(path)
        raise DocumentError(f"{where}: {problem.message}") from None


def parse_value(text: str) -> Any:
    """A value written inline (``20000``, ``1e-4``, ``[64, 64]``, ``null``, ``CartPole-v1``)
    read in the same YAML dialect as manifest files, so ``--set`` means what a file would."""
    try:
        return _load(text)
    except _Problem as problem:
        raise DocumentError(f"{_short(text)!r}: {problem.message}") from None


def load_spec(spec_cls: Any, path: str | Path) -> Any:
    """Load a spec file into ``spec_cls``; a :class:`SpecError` names file:line:column."""
    data, locate = load_document(path)
    if not isinstance(data, dict):
        issue = Issue((), data, f"expected a mapping of {spec_cls.__name__} fields", (1, 1))
        raise SpecError(spec_cls.__name__, [issue], str(path))
    return parse_spec(spec_cls, data, source=str(path), locate=locate)


class _Dumper(CSafeDumper):
    """PyYAML's C dumper, quoting exactly the strings the dialect would read as something
    else (PyYAML's own YAML 1.1 rules would leave ``1e6`` or ``0o7`` plain)."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind.id != "scalar" or not implicit[0]:
            return super().resolve(kind, value, implicit)
        try:
            read = _plain(value)
        except ValueError:  # ``.inf``, ``1e400``: quoted, they stay the strings they are
            return "tag:yaml.org,2002:float"
        return _DUMPED_TAGS[type(read)]


_DUMPED_TAGS = {
    kind: f"tag:yaml.org,2002:{name}"
    for kind, name in ((bool, "bool"), (int, "int"), (float, "float"), (type(None), "null"))
} | {str: _STR}


def dump_yaml(data: Any) -> str:
    """``data`` as block-style YAML, keys in their given order (manifests the CLI writes)."""
    return yaml_dump(
        data, Dumper=_Dumper, default_flow_style=False, sort_keys=False, allow_unicode=True
    )


def modeline(output: Path) -> str:
    """The yaml-language-server comment pointing a manifest at ``output`` to the schema
    shipped with the package (a relative path: editors resolve it offline)."""
    schema = Path(__file__).parents[1] / "schemas" / "manifest.schema.json"  # agilerl/schemas
    relative = os.path.relpath(schema.resolve(), Path(output).resolve().parent)
    return f"# yaml-language-server: $schema={relative}\n"
