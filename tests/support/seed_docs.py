"""Parser for the API-reference seeds in ``tests/data/seeds/*.txt``.

The seeds are the rendered (Sphinx) reference of the original ``agilerl.models`` API.
This module turns them into plain data so that ``test_seed_parity.py`` can compare
the documented contract with the implementation without hand-copying it:

* ``class dotted.Path(*, field: Annotation = default, ...)`` lines become
  :class:`DocClass` objects whose fields come from parsing the signature as Python
  source (``def f(*, ...): pass``) with :mod:`ast`;
* member lines (methods, ``classmethod``/``static`` methods, properties,
  ``model_config``) become :class:`DocMember` objects; a ``Parameters:`` block that
  follows a ``Build ...`` summary without a signature line of its own (the renderer
  dropped it) becomes the ``build_algorithm`` member it documents;
* ``dotted.NAME = <dotted.Class object>`` lines become :class:`DocData` objects.

Anything the parser does not understand inside a class stays prose; the sanity test
in ``test_seed_parity.py`` guards against a parser that silently finds nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import TESTS

SEEDS_DIR = TESTS / "data" / "seeds"
SEED_FILES = ("network_specs.txt", "algorithm_specs.txt")

_MISSING = object()

#: Keywords of annotated_types / pydantic constraints that count as bounds.
BOUND_KEYS = ("gt", "ge", "lt", "le", "min_length", "max_length", "multiple_of", "pattern")
#: Generic containers whose arguments describe items, not the value itself.
CONTAINERS = ("list", "set", "frozenset", "tuple", "dict", "type", "Sequence", "Mapping")


class SeedParseError(ValueError):
    """The seed text has a shape this parser does not know."""


@dataclass(frozen=True)
class DocField:
    """One documented model field (a keyword-only parameter of the class signature)."""

    owner: str
    name: str
    annotation: str
    required: bool
    default: Any  # ``_MISSING`` when required
    bounds: frozenset[tuple[str, Any]]
    literals: frozenset[Any] | None  # None: the annotation has no Literal
    nullable: bool
    types: str  # normalised type text, see render_types()

    @property
    def id(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass(frozen=True)
class DocParam:
    """One documented parameter of a method."""

    name: str
    kind: str  # "positional_or_keyword" | "keyword_only" | "var_positional" | "var_keyword"
    default: Any  # ``_MISSING`` when none is documented
    annotation: str | None


@dataclass
class DocMember:
    """A documented method, classmethod, staticmethod, property or ``model_config``."""

    owner: str
    name: str
    kind: str  # "method" | "classmethod" | "staticmethod" | "property" | "config"
    params: list[DocParam] | None = None  # None for property / config
    returns: str | None = None
    config: dict[str, Any] | None = None
    from_parameters_block: bool = False  # signature line missing; params from "Parameters:"
    line: str = ""

    @property
    def id(self) -> str:
        return f"{self.owner}.{self.name}"


@dataclass
class DocClass:
    """A documented class: its dotted path, fields (None without a signature), members."""

    path: str
    fields: list[DocField] | None
    members: list[DocMember] = field(default_factory=list)
    source_file: str = ""
    line: str = ""

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[1]

    @property
    def module(self) -> str:
        return self.path.rsplit(".", 1)[0]


@dataclass(frozen=True)
class DocData:
    """A documented module-level object: ``path = <repr>``."""

    path: str
    repr: str

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[1]

    @property
    def type_path(self) -> str | None:
        match = re.fullmatch(r"<([\w.]+) object>", self.repr)
        return match.group(1) if match else None


@dataclass
class SeedDocs:
    classes: list[DocClass] = field(default_factory=list)
    data: list[DocData] = field(default_factory=list)

    @property
    def fields(self) -> list[DocField]:
        return [f for c in self.classes for f in (c.fields or [])]

    @property
    def members(self) -> list[DocMember]:
        return [m for c in self.classes for m in c.members]


# --------------------------------------------------------------------------- lines

_CLASS_RE = re.compile(r"class (?P<path>agilerl\.[\w.]+)(?:\((?P<sig>.*)\))?")
_DATA_RE = re.compile(r"(?P<path>agilerl\.[\w.]+) = (?P<repr><.*>)")
_CONFIG_RE = re.compile(r"model_config: ClassVar\[ConfigDict\] = (?P<value>\{.*\})")
_PROPERTY_RE = re.compile(r"property (?P<name>[A-Za-z_]\w*): (?P<type>.+)")
_METHOD_RE = re.compile(
    r"(?:(?P<deco>classmethod|static) )?(?P<name>[A-Za-z_]\w*)\((?P<sig>.*)\) → (?P<ret>.+)"
)
_PARAMS_HEADER_RE = re.compile(r"Parameters::?\s*(?P<inline>.*)")
_PARAM_LINE_RE = re.compile(r"(?P<name>[A-Za-z_]\w*) \((?P<type>.*)\) – (?P<desc>.*)")
_DEFAULTS_TO_RE = re.compile(r"Defaults to (?:[“\"'](?P<quoted>.*?)[”\"']|(?P<bare>[^\s.]+))")
#: Summary lines of a member whose signature line the renderer dropped.
_ORPHAN_SUMMARY_RE = re.compile(r"Build (?:a|an) .* from spec fields\.")


def _clean(line: str) -> str:
    """Drop the permalink marker (``¶``) and an inline ``¶: summary`` tail."""
    line = line.strip()
    if "¶: " in line:
        line = line.split("¶: ", 1)[0]
    return line.rstrip("¶").rstrip()


# ---------------------------------------------------------------- annotation walk


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise SeedParseError(f"not a name: {ast.unparse(node)}")


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    return [node]


def _subscript_args(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


@dataclass
class AnnotationFacts:
    """What the checks compare, gathered from one annotation (seed or code side)."""

    bounds: set[tuple[str, Any]] = field(default_factory=set)
    literals: set[Any] | None = None
    nullable: bool = False
    types: set[str] = field(default_factory=set)

    def add_literals(self, values: list[Any]) -> None:
        self.literals = (self.literals or set()) | set(values)


def _constraint_pairs(call: ast.expr, prefix: str) -> set[tuple[str, Any]]:
    if not isinstance(call, ast.Call) or call.args:
        raise SeedParseError(f"unknown Annotated metadata: {ast.unparse(call)}")
    pairs = set()
    for kw in call.keywords:
        if kw.arg not in BOUND_KEYS:
            raise SeedParseError(f"unknown constraint keyword: {ast.unparse(call)}")
        pairs.add((prefix + kw.arg, ast.literal_eval(kw.value)))
    return pairs


def render_types(members: set[str] | frozenset[str]) -> str:
    """A union's member names as one text; ``Any | X`` is ``Any``."""
    return "Any" if "Any" in members else " | ".join(sorted(members))


def _walk_doc_annotation(node: ast.expr, facts: AnnotationFacts, prefix: str = "") -> set[str]:
    """Collect bounds/literals/nullability; return the union's normalised member names.

    Bounds on container items are collected with an ``item.`` prefix; literals and
    nullability only count for the value itself (``prefix == ""``).
    """
    members = _union_members(node)
    if len(members) > 1:
        return set().union(*(_walk_doc_annotation(m, facts, prefix) for m in members))
    if isinstance(node, ast.Constant) and node.value is None:
        if not prefix:
            facts.nullable = True
        return {"None"}
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = _dotted(node)
        if name == "Any" and not prefix:
            facts.nullable = True
        return {name}
    if isinstance(node, ast.Subscript):
        head = _dotted(node.value)
        args = _subscript_args(node)
        if head == "Annotated":
            inner = _walk_doc_annotation(args[0], facts, prefix)
            for meta in args[1:]:
                facts.bounds |= _constraint_pairs(meta, prefix)
            return inner
        if head == "Literal":
            if not prefix:
                facts.add_literals([ast.literal_eval(a) for a in args])
            return {"Literal"}
        if head == "Optional":
            if not prefix:
                facts.nullable = True
            return _walk_doc_annotation(args[0], facts, prefix) | {"None"}
        if head == "Union":
            return set().union(*(_walk_doc_annotation(a, facts, prefix) for a in args))
        if head in CONTAINERS:
            inner = [render_types(_walk_doc_annotation(a, facts, "item.")) for a in args]
            return {f"{head}[{', '.join(inner)}]"}
        raise SeedParseError(f"unknown generic in annotation: {ast.unparse(node)}")
    if isinstance(node, ast.Constant) and node.value is Ellipsis:
        return {"..."}
    raise SeedParseError(f"unknown annotation: {ast.unparse(node)}")


def annotation_facts(node: ast.expr) -> tuple[AnnotationFacts, str]:
    facts = AnnotationFacts()
    text = render_types(_walk_doc_annotation(node, facts))
    return facts, text


# ----------------------------------------------------------------- signatures


def _parse_signature(sig: str, where: str) -> ast.arguments:
    source = f"def f({sig}): pass"
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise SeedParseError(f"{where}: signature is not Python: {sig!r} ({err})") from None
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    return func.args


def _class_fields(owner: str, sig: str) -> list[DocField]:
    args = _parse_signature(sig, owner)
    if args.args or args.posonlyargs or args.vararg or args.kwarg:
        raise SeedParseError(f"{owner}: class signature must be keyword-only: {sig!r}")
    fields = []
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.annotation is None:
            raise SeedParseError(f"{owner}.{arg.arg}: field without annotation")
        facts, type_text = annotation_facts(arg.annotation)
        fields.append(
            DocField(
                owner=owner,
                name=arg.arg,
                annotation=ast.unparse(arg.annotation),
                required=default is None,
                default=_MISSING if default is None else ast.literal_eval(default),
                bounds=frozenset(facts.bounds),
                literals=None if facts.literals is None else frozenset(facts.literals),
                nullable=facts.nullable,
                types=type_text,
            )
        )
    return fields


def _method_params(sig: str, where: str) -> list[DocParam]:
    args = _parse_signature(sig, where)
    params: list[DocParam] = []
    positional = args.posonlyargs + args.args
    pos_defaults = [_MISSING] * (len(positional) - len(args.defaults)) + [
        ast.literal_eval(d) for d in args.defaults
    ]
    for arg, default in zip(positional, pos_defaults, strict=True):
        kind = "positional_only" if arg in args.posonlyargs else "positional_or_keyword"
        params.append(DocParam(arg.arg, kind, default, _unparse(arg.annotation)))
    if args.vararg:
        params.append(
            DocParam(args.vararg.arg, "var_positional", _MISSING, _unparse(args.vararg.annotation))
        )
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        value = _MISSING if default is None else ast.literal_eval(default)
        params.append(DocParam(arg.arg, "keyword_only", value, _unparse(arg.annotation)))
    if args.kwarg:
        params.append(
            DocParam(args.kwarg.arg, "var_keyword", _MISSING, _unparse(args.kwarg.annotation))
        )
    return params


def _unparse(node: ast.expr | None) -> str | None:
    return None if node is None else ast.unparse(node)


# ---------------------------------------------------------------------- parser


def _parameters_block(lines: list[str], start: int) -> tuple[list[DocParam], int]:
    """Parse ``Parameters:`` at ``lines[start]``; return params and the next index."""
    header = _PARAMS_HEADER_RE.fullmatch(lines[start])
    assert header is not None
    entries: list[str] = []
    if header.group("inline"):
        entries.append(header.group("inline"))
        index = start + 1
    else:
        index = start + 1
        while index < len(lines):
            line = lines[index]
            if not line:
                if entries:  # a blank after the list ends it
                    break
                index += 1
                continue
            if not _PARAM_LINE_RE.fullmatch(line):
                break
            entries.append(line)
            index += 1
    params = []
    for entry in entries:
        match = _PARAM_LINE_RE.fullmatch(entry)
        if match is None:
            raise SeedParseError(f"not a parameter line: {entry!r}")
        defaults = _DEFAULTS_TO_RE.search(match.group("desc"))
        default: Any = _MISSING
        if defaults is not None:
            if defaults.group("quoted") is not None:
                default = defaults.group("quoted")
            else:
                default = ast.literal_eval(defaults.group("bare"))
        params.append(
            DocParam(match.group("name"), "positional_or_keyword", default, match.group("type"))
        )
    if not params:
        raise SeedParseError(f"empty Parameters block at line {start + 1}")
    return params, index


def parse_seed_text(text: str, source_file: str = "") -> SeedDocs:
    docs = SeedDocs()
    lines = [_clean(line) for line in text.splitlines()]
    current: DocClass | None = None
    member: DocMember | None = None
    last_prose: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        if match := _CLASS_RE.fullmatch(line):
            path, sig = match.group("path"), match.group("sig")
            name = path.rsplit(".", 1)[1]
            fields = None if sig is None else _class_fields(name, sig)
            current = DocClass(path, fields, source_file=source_file, line=line)
            docs.classes.append(current)
            member, last_prose = None, None
            continue
        if match := _DATA_RE.fullmatch(line):
            docs.data.append(DocData(match.group("path"), match.group("repr")))
            current, member, last_prose = None, None, None
            continue
        if current is None:
            continue  # page prose and section headings
        owner = current.name
        if match := _CONFIG_RE.fullmatch(line):
            member = DocMember(
                owner, "model_config", "config",
                config=ast.literal_eval(match.group("value")), line=line,
            )  # fmt: skip
            current.members.append(member)
            continue
        if match := _PROPERTY_RE.fullmatch(line):
            member = DocMember(owner, match.group("name"), "property", returns=match.group("type"))
            member.line = line
            current.members.append(member)
            continue
        if match := _METHOD_RE.fullmatch(line):
            kind = {"classmethod": "classmethod", "static": "staticmethod", None: "method"}[
                match.group("deco")
            ]
            name = match.group("name")
            params = _method_params(match.group("sig"), f"{owner}.{name}")
            member = DocMember(owner, name, kind, params, match.group("ret"), line=line)
            current.members.append(member)
            continue
        if _PARAMS_HEADER_RE.fullmatch(line):
            params, index = _parameters_block(lines, index - 1)
            if member is None:
                # The renderer dropped this member's signature line; its summary says
                # which member it is.
                if last_prose is None or not _ORPHAN_SUMMARY_RE.fullmatch(last_prose):
                    raise SeedParseError(
                        f"{owner}: Parameters block without a member (after {last_prose!r})"
                    )
                member = DocMember(
                    owner, "build_algorithm", "method", params,
                    from_parameters_block=True, line=last_prose,
                )  # fmt: skip
                current.members.append(member)
            continue
        last_prose = line
    return docs


def load_seed_docs(directory: Path = SEEDS_DIR) -> SeedDocs:
    docs = SeedDocs()
    for name in SEED_FILES:
        parsed = parse_seed_text((directory / name).read_text(encoding="utf-8"), name)
        docs.classes += parsed.classes
        docs.data += parsed.data
    return docs


MISSING = _MISSING
