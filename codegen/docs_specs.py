"""The spec reference of the documentation: one Markdown page per schema of ``schemas/``.

Each page lists every field of its spec (those of the ``...Fields`` fragments it closes
included) with type, default, constraints, description and examples; the cross-field
rules in words (those of ``x-agilerl-rules`` and those stated in standard keywords,
read back by ``agilerl/models/standard_rules.py``); the manifest's conditional sections (``if`` /
``then``); and each ``$defs`` entry. ``docs/hooks/gen_reference.py`` writes the pages at
build time, so they cannot drift from the schemas; tests call :func:`spec_pages` directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.models.standard_rules import is_rule_statement, read_rule, schema_defaults

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_SUFFIX = ".schema.json"
RULES_KEYWORD = "x-agilerl-rules"
RENAMED_KEYWORD = "x-agilerl-renamed"  # agilerl.models.legacy (old spellings of keys)
ALGORITHM_KEYWORD = "x-agilerl-algorithm"

Node = Mapping[str, Any]


def code(value: Any) -> str:
    """A JSON value as inline code, with enough backticks for any it holds."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    fence = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def literal(value: Any) -> str:
    """A JSON value (a default, an enum member) as it would be written in a manifest."""
    return code(json.dumps(value, ensure_ascii=False))


#: Inline code, with backticks as its fence (a pipe inside needs no escape in a table).
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1")


def cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table: one line, and each pipe outside
    inline code escaped (inside it, the escape would show)."""
    text = " ".join(text.split())
    parts, end = [], 0
    for span in _CODE_SPAN.finditer(text):
        parts += [text[end : span.start()].replace("|", "\\|"), span.group()]
        end = span.end()
    return "".join([*parts, text[end:].replace("|", "\\|")])


def page_name(schema_file: str) -> str:
    """``dqn.schema.json`` -> ``dqn.md``: the page is named after the schema's stem."""
    return schema_file.removesuffix(SCHEMA_SUFFIX) + ".md"


def def_anchor(name: str) -> str:
    """The anchor of a ``$defs`` entry on its page (explicit, so links never depend on
    how headings are slugified)."""
    return "def-" + name.lower()


@dataclass(frozen=True)
class Target:
    """What a ``$ref`` points to: the schema file, the ``$defs`` name (None for the whole
    schema) and the node."""

    file: str
    name: str | None
    node: Node

    @property
    def title(self) -> str:
        return self.node.get("title") or self.name or self.file

    def link(self, from_file: str) -> str:
        page = "" if self.file == from_file else page_name(self.file)
        anchor = f"#{def_anchor(self.name)}" if self.name else ""
        return f"[{self.title}]({page}{anchor})"


class SchemaSet:
    """The schemas of one folder, by file name, with ``$ref`` resolution between them."""

    def __init__(self, schemas: Mapping[str, Node]):
        self.schemas = dict(schemas)

    @classmethod
    def load(cls, folder: Path = ROOT / "schemas") -> SchemaSet:
        files = sorted(folder.glob(f"*{SCHEMA_SUFFIX}"))
        return cls({path.name: json.loads(path.read_text()) for path in files})

    def resolve(self, ref: str, from_file: str) -> Target:
        file, _, pointer = ref.partition("#")
        file = file or from_file
        if file not in self.schemas:
            raise ValueError(f"{from_file}: $ref {ref!r} names no schema of the set")
        node: Any = self.schemas[file]
        parts = [p for p in pointer.split("/") if p]
        for part in parts:
            if not isinstance(node, Mapping) or part not in node:
                raise ValueError(f"{from_file}: $ref {ref!r} points at nothing ({part!r})")
            node = node[part]
        name = parts[-1] if len(parts) == 2 and parts[0] == "$defs" else None
        if parts and name is None:
            raise ValueError(f"{from_file}: $ref {ref!r}: only $defs entries are documented")
        return Target(file, name, node)


#: Keywords that make a schema a structure to link to rather than a value to inline.
_STRUCTURE = ("properties", "allOf", "oneOf", "anyOf", "patternProperties")


def _is_structure(node: Node) -> bool:
    return node.get("type") == "object" or any(key in node for key in _STRUCTURE)


@dataclass(frozen=True)
class Context:
    """Where a node is rendered: its schema file (links are relative to its page)."""

    schemas: SchemaSet
    file: str

    def inline(self, node: Node) -> tuple[Node, str | None]:
        """``node`` with a ``$ref`` to a plain value (``BatchSize``, ``Activation``) merged
        in, its own keywords winning, and the link to that definition; a ``$ref`` to a
        structure stays a ``$ref``."""
        if "$ref" not in node:
            return node, None
        target = self.schemas.resolve(node["$ref"], self.file)
        if _is_structure(target.node):
            return node, None
        merged = {**target.node, **{k: v for k, v in node.items() if k != "$ref"}}
        return merged, target.link(self.file)


# --- types -------------------------------------------------------------------------


def type_text(node: Node, ctx: Context) -> str:
    """What values a schema node accepts, in words, with links to referenced specs."""
    node, link = ctx.inline(node)
    text = _bare_type(node, ctx)
    return f"{text} ({link})" if link else text


def _bare_type(node: Node, ctx: Context) -> str:
    if "$ref" in node:
        return ctx.schemas.resolve(node["$ref"], ctx.file).link(ctx.file)
    if "const" in node:
        return literal(node["const"])
    if "enum" in node:
        return "one of " + ", ".join(literal(v) for v in node["enum"])
    for keyword in ("oneOf", "anyOf"):
        if keyword in node:
            return _choices(node, node[keyword], ctx)
    kind = node.get("type")
    if kind is None:
        return "any"
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array" and "items" in node:
        return f"array of {type_text(node['items'], ctx)}"
    if kind == "object":
        return _object_type(node, ctx)
    return kind


def _object_type(node: Node, ctx: Context) -> str:
    values = [s for s in node.get("patternProperties", {}).values()]
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping):
        values.append(extra)
    if values and not node.get("properties"):
        return "object of " + " or ".join(type_text(v, ctx) for v in values)
    return "object"


def _choices(node: Node, branches: list[Node], ctx: Context) -> str:
    tag = node.get("discriminator", {}).get("propertyName")
    texts = [_branch(branch, tag, ctx) for branch in branches]
    if tag:
        return f"selected by {code(tag)}: " + "; ".join(texts)
    return " or ".join(texts)


def _branch(branch: Node, tag: str | None, ctx: Context) -> str:
    """One branch of a choice: a referenced spec, or an inline section closing one
    fragment (the manifest's ``DQNSection``: ``DQNFields`` with ``name: DQN``)."""
    fragments = [s for s in branch.get("allOf", []) if "$ref" in s]
    if "$ref" not in branch and len(fragments) == 1:
        target = ctx.schemas.resolve(fragments[0]["$ref"], ctx.file)
        value = branch.get("properties", {}).get(tag or "", {}).get("const")
        shown = target.link(ctx.file)
        return f"{code(f'{tag}: {value}')} → {shown}" if value is not None else shown
    text = type_text(branch, ctx)
    if tag and "$ref" in branch:
        target = ctx.schemas.resolve(branch["$ref"], ctx.file)
        value = target.node.get("properties", {}).get(tag, {}).get("const")
        if value is not None:
            return f"{code(f'{tag}: {value}')} → {text}"
    return text


# --- constraints -------------------------------------------------------------------

#: Each validation keyword and how a constraint of it reads. A keyword missing here (a
#: new one in a schema) is shown as JSON rather than dropped.
CONSTRAINT_WORDS: dict[str, Callable[[Any, Context], str]] = {
    "minimum": lambda v, ctx: f"≥ {json.dumps(v)}",
    "exclusiveMinimum": lambda v, ctx: f"> {json.dumps(v)}",
    "maximum": lambda v, ctx: f"≤ {json.dumps(v)}",
    "exclusiveMaximum": lambda v, ctx: f"< {json.dumps(v)}",
    "multipleOf": lambda v, ctx: f"a multiple of {json.dumps(v)}",
    "minLength": lambda v, ctx: f"at least {v} character{'s' * (v != 1)}",
    "maxLength": lambda v, ctx: f"at most {v} character{'s' * (v != 1)}",
    "pattern": lambda v, ctx: f"matches {code(v)}",
    "format": lambda v, ctx: f"format {code(v)}",
    "minItems": lambda v, ctx: f"at least {v} item{'s' * (v != 1)}",
    "maxItems": lambda v, ctx: f"at most {v} item{'s' * (v != 1)}",
    "uniqueItems": lambda v, ctx: "items unique" if v else "",
    "minProperties": lambda v, ctx: f"at least {v} key{'s' * (v != 1)}",
    "maxProperties": lambda v, ctx: f"at most {v} key{'s' * (v != 1)}",
    "patternProperties": lambda v, ctx: _key_patterns(v),
    "propertyNames": lambda v, ctx: f"keys: {constraints_text(v, ctx) or type_text(v, ctx)}",
    "additionalProperties": lambda v, ctx: "no other keys" if v is False else "",
    "not": lambda v, ctx: _not_text(v, ctx),
    "items": lambda v, ctx: f"each item {text}" if (text := constraints_text(v, ctx)) else "",
}

#: Keywords that are not constraints on a value: annotations, structure, and the ones
#: ``type_text`` already shows.
_NOT_CONSTRAINTS = frozenset(
    {
        "$ref",
        "$id",
        "$schema",
        "$defs",
        "title",
        "description",
        "markdownDescription",
        "default",
        "examples",
        "deprecated",
        "type",
        "const",
        "enum",
        "oneOf",
        "anyOf",
        "allOf",
        "if",
        "then",
        "properties",
        "required",
        "discriminator",
        "customTypePath",
        "unevaluatedProperties",
        RULES_KEYWORD,
        ALGORITHM_KEYWORD,
    }
)


#: Key patterns that allow any key (a map of free names): no constraint to show.
_ANY_KEY = frozenset({"", "^", ".*", "^.*$"})


def _key_patterns(patterns: Mapping[str, Any]) -> str:
    shown = [code(p) for p in patterns if p not in _ANY_KEY]
    return "keys match " + " or ".join(shown) if shown else ""


def _not_text(node: Node, ctx: Context) -> str:
    # The schemas' one use: a string must not end in a newline (``$`` matches before one).
    if set(node) <= {"type", "pattern"} and "pattern" in node:
        return f"does not match {code(node['pattern'])}"
    return f"not {_value_text(node, ctx)}"


def _value_text(node: Node, ctx: Context) -> str:
    constraints = constraints_text(node, ctx)
    return type_text(node, ctx) + (f" ({constraints})" if constraints else "")


def constraints_text(node: Node, ctx: Context) -> str:
    """The constraints on a value beyond its type, in words (``≥ 1``, ``matches ...``);
    those of each branch of an ``anyOf``/``oneOf`` that has any, named by its type where
    more than one has."""
    node, _ = ctx.inline(node)
    parts = []
    for keyword, value in node.items():
        if keyword in _NOT_CONSTRAINTS or keyword.startswith("x-"):
            continue
        words = CONSTRAINT_WORDS.get(keyword)
        text = words(value, ctx) if words else f"{keyword}: {code(value)}"
        if text:
            parts.append(text)
    branches = [
        (b, text)
        for b in node.get("oneOf", node.get("anyOf", []))
        if "$ref" not in b and (text := constraints_text(b, ctx))
    ]
    if len(branches) == 1:
        parts.append(branches[0][1])
    else:
        parts.extend(f"{type_text(b, ctx)}: {text}" for b, text in branches)
    return "; ".join(parts)


# --- fields ------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    """One property of a spec, with the fragment that declares it (None: the spec itself)."""

    name: str
    node: Node
    required: bool
    origin: Target | None


@dataclass(frozen=True)
class Shape:
    """The properties, rules and conditions of an object schema, through the fragments
    it closes (``allOf`` of ``$ref``\\ s)."""

    fields: list[Field]
    rules: list[tuple[Mapping[str, Any], Target | None]]
    conditions: list[Node]


def shape(node: Node, ctx: Context, origin: Target | None = None) -> Shape:
    fields: dict[str, Field] = {}
    rules: list[tuple[Mapping[str, Any], Target | None]] = []
    conditions: list[Node] = []
    required: set[str] = set(node.get("required", ()))
    defaults = schema_defaults(node)
    for part in node.get("allOf", ()):
        if is_rule_statement(part):  # a rule in standard keywords: worded as the rule
            rules.append((read_rule(part, defaults.get), origin))
        elif "$ref" in part:
            target = ctx.schemas.resolve(part["$ref"], ctx.file)
            inner = shape(target.node, Context(ctx.schemas, target.file), target)
            fields.update((f.name, f) for f in inner.fields)
            required.update(f.name for f in inner.fields if f.required)
            rules.extend(inner.rules)
            conditions.extend(inner.conditions)
        elif "if" in part:
            conditions.append(part)
    # The spec's own declaration of a property is the most specific one; it wins.
    for name, prop in node.get("properties", {}).items():
        fields[name] = Field(name, prop, False, origin)
    rules.extend((rule, origin) for rule in node.get(RULES_KEYWORD, ()))
    return Shape(
        [Field(f.name, f.node, f.name in required, f.origin) for f in fields.values()],
        rules,
        conditions,
    )


def _field_context(field: Field, ctx: Context) -> Context:
    return Context(ctx.schemas, field.origin.file) if field.origin else ctx


def _relink(text: str, source: Context, ctx: Context) -> str:
    """Links written for a fragment's page, re-rendered for this page: same-page links
    (``(#def-x)``) of another file must name that file's page."""
    if source.file == ctx.file:
        return text
    return text.replace("](#", f"]({page_name(source.file)}#")


def default_text(field: Field, ctx: Context) -> str:
    node, _ = _field_context(field, ctx).inline(field.node)
    if field.required:
        return "required"
    return literal(node["default"]) if "default" in node else "—"


def description_text(field: Field, ctx: Context) -> str:
    source = _field_context(field, ctx)
    node, _ = source.inline(field.node)
    if "$ref" in node and "description" not in node:
        node = {**source.schemas.resolve(node["$ref"], source.file).node, **node}
    parts = []
    if node.get("deprecated"):
        parts.append("**Deprecated.**")
    parts.append(node.get("description", ""))
    if node.get("examples"):
        parts.append("Example: " + ", ".join(literal(e) for e in node["examples"]) + ".")
    return _relink(" ".join(p for p in parts if p), source, ctx)


def fields_table(fields: list[Field], ctx: Context) -> list[str]:
    lines = [
        "| Field | Type | Default | Constraints | Description |",
        "|---|---|---|---|---|",
    ]
    for field in fields:
        source = _field_context(field, ctx)
        kind = _relink(type_text(field.node, source), source, ctx)
        limits = _relink(constraints_text(field.node, source), source, ctx)
        where = f" (from {field.origin.link(ctx.file)})" if field.origin else ""
        row = (
            code(field.name),
            kind,
            default_text(field, ctx),
            limits or "—",
            description_text(field, ctx) + where,
        )
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return lines


# --- rules -------------------------------------------------------------------------

_SUBJECT = {"value": "{f}", "length": "the length of {f}", "items": "every item of {f}"}


def _subject(rule: Mapping[str, Any]) -> str:
    return _SUBJECT[rule.get("measure", "value")].format(f=code(rule["field"]))


def _names(names: Iterable[str]) -> str:
    shown = [code(n) for n in names]
    return ", ".join(shown[:-1]) + f" and {shown[-1]}" if len(shown) > 1 else shown[0]


def _ignored_when(rule: Mapping[str, Any]) -> str:
    cases = [
        f"{code(path)} is " + " or ".join(literal(v) for v in values)
        for path, values in rule["ignoredWhen"].items()
    ]
    because = f": {rule['because']}" if rule.get("because") else " (it would be ignored)"
    return f"{code(rule['flag'])} must not be `true` when " + ", or ".join(cases) + because


def _when(conditions: Mapping[str, list[Any]]) -> str:
    """The conditions of a ``requiredWhen`` / ``forbiddenWhen`` rule, all of which hold."""
    return " and ".join(
        f"{code(path)} is " + " or ".join(literal(v) for v in values)
        for path, values in conditions.items()
    )


#: Each kind of cross-field rule (keyed by the keyword that marks it, as in
#: ``agilerl/models/rules.py``) and how it reads.
RULE_WORDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "atMost": lambda r: f"{_subject(r)} must be at most {code(r['atMost'])}",
    "below": lambda r: f"{_subject(r)} must be less than {code(r['below'])}",
    "within": lambda r: (
        f"{_subject(r)} must be between {code(r['within'][0])} and {code(r['within'][1])}"
        " (inclusive)"
    ),
    "sameLength": lambda r: f"{_names(r['sameLength'])} must have the same length",
    "requiredIf": lambda r: (
        f"{code(r['field'])} is required (not null) when {code(r['requiredIf'])} is `true`"
    ),
    "anyPositive": lambda r: f"at least one of {_names(r['anyPositive'])} must be above 0",
    "exactlyOne": lambda r: (
        f"exactly one of {_names(r['exactlyOne']).replace(' and ', ' or ')} must be given "
        "(not null)"
    ),
    "increasing": lambda r: f"the numbers of {code(r['field'])} must strictly increase",
    "sameAs": lambda r: (
        f"where {code(r['field'])} holds {code(r['key'])}, it must equal the "
        f"{code(r['key'])} of {code(r['sameAs'])}"
    ),
    "ignoredWhen": _ignored_when,
    "requiredWhen": lambda r: (
        f"{code(r['field'])} is required (not null) when {_when(r['requiredWhen'])}"
    ),
    "forbiddenWhen": lambda r: (
        f"{code(r['field'])} must be left out (null) when {_when(r['forbiddenWhen'])}"
        + (f": {r['because']}" if r.get("because") else "")
    ),
    "exclusive": lambda r: f"at most one of {_names(r['exclusive'])} may be given",
}


def rule_text(rule: Mapping[str, Any]) -> str:
    """One ``x-agilerl-rules`` rule in words, as a sentence."""
    kind = next((key for key in RULE_WORDS if key in rule), None)
    if kind is None:
        raise ValueError(f"{RULES_KEYWORD}: rule {json.dumps(rule)} is of no known kind")
    text = RULE_WORDS[kind](rule)
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")


def rules_list(rules: list[tuple[Mapping[str, Any], Target | None]], ctx: Context) -> list[str]:
    lines = []
    for rule, origin in rules:
        where = f" (from {origin.link(ctx.file)})" if origin and origin.file != ctx.file else ""
        where = where.replace("](#", f"]({page_name(origin.file)}#") if origin else where
        lines.append(f"- {rule_text(rule)}{where}")
    return lines


RULES_NOTE = (
    "Cross-field rules (in standard keywords where JSON Schema can state them, else in "
    "[`x-agilerl-rules`](../rules-vocabulary.md)), enforced alike by the Python models, the "
    "`jsonschema` validator and ajv; a property left out takes its default, and a rule "
    "whose operands are null is skipped:"
)


# --- conditions (if / then) --------------------------------------------------------


def _one_of(values: list[Any]) -> str:
    if len(values) == 1:
        return f"is {literal(values[0])}"
    return "is one of " + ", ".join(literal(v) for v in values)


def _condition(node: Node, prefix: str = "") -> list[str]:
    """What an ``if`` asks, as ``path is one of ...`` clauses (the shapes the schemas use:
    nested ``properties`` ending in ``const`` or ``enum``)."""
    clauses = []
    for name, prop in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        if "const" in prop:
            clauses.append(f"{code(path)} is {literal(prop['const'])}")
        elif "enum" in prop:
            clauses.append(f"{code(path)} {_one_of(prop['enum'])}")
        clauses.extend(_condition(prop, f"{path}."))
    return clauses


def condition_text(part: Node, ctx: Context) -> str:
    clauses = _condition(part["if"]) or [code(json.dumps(part["if"]))]
    then = part.get("then", {})
    outcomes = [
        text
        for name, prop in then.get("properties", {}).items()
        for text in _outcomes(prop, name, ctx)
    ] or [code(json.dumps(then))]
    return "When " + " and ".join(clauses) + ": " + "; ".join(outcomes) + "."


def _outcomes(node: Node, path: str, ctx: Context) -> list[str]:
    """What a ``then`` asks of the property at ``path``: its type, or, for an object it
    narrows (the manifest's ``mutation`` per algorithm), the keys it may hold."""
    branches = [b for b in node.get("anyOf", ()) if b.get("type") != "null"]
    narrowed = branches[0] if len(branches) == 1 and "$ref" not in branches[0] else node
    if "properties" not in narrowed or "$ref" in narrowed:
        return [f"{code(path)} is {type_text(node, ctx)}"]
    if narrowed.get("additionalProperties") is False:
        return [f"{code(path)} may hold only {_names(narrowed['properties'])}"]
    return [
        text
        for name, prop in narrowed["properties"].items()
        for text in _outcomes(prop, f"{path}.{name}", ctx)
    ]


# --- pages -------------------------------------------------------------------------

_ALGORITHM_KEYS = {
    "agent_type": "Agent type",
    "off_policy": "Off-policy",
    "training_fn": "Training function",
    "network_spec": "Network spec",
    "default_evo_steps": "Default `evo_steps`",
}


def _algorithm_table(meta: Mapping[str, Any], ctx: Context, titles: Mapping[str, str]) -> list[str]:
    lines = ["| Registry entry | Value |", "|---|---|"]
    for key, value in meta.items():
        shown = literal(value)
        if key == "network_spec" and value in titles:
            shown = f"[{value}]({page_name(titles[value])})"
        lines.append(f"| {_ALGORITHM_KEYS.get(key, code(key))} | {cell(shown)} |")
    return lines


def _object_sections(node: Node, ctx: Context, heading: str) -> list[str]:
    found = shape(node, ctx)
    lines: list[str] = []
    if found.fields:
        lines += ["", *fields_table(found.fields, ctx)]
    deprecated = [
        f.name for f in found.fields if _field_context(f, ctx).inline(f.node)[0].get("deprecated")
    ]
    if deprecated:
        lines += [
            "",
            '!!! warning "Deprecated"',
            f"    {_names(deprecated)}: deprecated (the schema marks them `deprecated`); "
            "each one's description says what to use instead.",
        ]
    renamed = node.get(RENAMED_KEYWORD, {})
    if renamed:
        old_names = ", ".join(f"{code(old)} for {code(new)}" for old, new in renamed.items())
        lines += [
            "",
            '!!! warning "Old spellings (deprecated)"',
            f"    AgileRL's old names are read under the new ones, with a warning: {old_names}. "
            "`agilerl validate --strict` refuses them; both spellings with different values "
            f"are an error (`{RENAMED_KEYWORD}`).",
        ]
    if found.rules:
        lines += ["", f"{heading} Rules", "", RULES_NOTE, "", *rules_list(found.rules, ctx)]
    if found.conditions:
        lines += ["", f"{heading} Conditions", ""]
        lines += [f"- {condition_text(part, ctx)}" for part in found.conditions]
    return lines


def _definition(
    name: str, node: Node, ctx: Context, closed: bool, listed: tuple[str, ...] = ()
) -> list[str]:
    """One ``$defs`` entry; ``closed``: the fragment the page's spec closes, whose fields
    the page lists already; ``listed``: the own fields of a fragment it builds on (a group
    it shares with a related spec, as DQN's with CQN), which the page lists already too."""
    lines = ["", f"### {node.get('title', name)} {{#{def_anchor(name)}}}", ""]
    if node.get("description"):
        lines += [node["description"], ""]
    if closed:
        return lines + ["Its fields are listed under [Fields](#fields) above."]
    if listed:
        rules = ", and its rules under Rules" if node.get(RULES_KEYWORD) else ""
        return lines + [
            f"Its own fields, {_names(listed)}, are listed under [Fields](#fields) above{rules}."
        ]
    if "properties" in node or "allOf" in node:
        return lines + _object_sections(node, ctx, "####")
    lines.append(f"Type: {type_text(node, ctx)}.")
    constraints = constraints_text(node, ctx)
    if constraints:
        lines += ["", f"Constraints: {constraints}."]
    return lines


def _listed_groups(schema: Node, ctx: Context) -> dict[str, tuple[str, ...]]:
    """The ``$defs`` fragments of this file whose own properties the page's field table
    shows as theirs (each row marked *from* the fragment): the groups the spec's fragment
    builds on. A table of them again would repeat every row. A fragment one of whose
    fields the spec redeclares is not among them; its own table shows what it holds."""
    own: dict[str, list[str]] = {}
    for field in shape(schema, ctx).fields:
        if field.origin is not None and field.origin.file == ctx.file and field.origin.name:
            own.setdefault(field.origin.name, []).append(field.name)
    closes = {part.get("$ref", "").removeprefix("#/$defs/") for part in schema.get("allOf", ())}
    return {
        name: tuple(names)
        for name, names in own.items()
        if name not in closes
        and set(names) == set(schema.get("$defs", {}).get(name, {}).get("properties", {}))
    }


def spec_page(schema_file: str, schemas: SchemaSet, python_names: Iterable[str] = ()) -> str:
    """The reference page of one schema file."""
    ctx = Context(schemas, schema_file)
    schema = schemas.schemas[schema_file]
    title = schema.get("title", schema_file)
    lines = [f"# {title}", ""]
    if schema.get("description"):
        lines += [schema["description"], ""]
    source = f"Schema: `schemas/{schema_file}`"
    if title in set(python_names):
        source += f"; in Python: `agilerl.models.{title}` ([API](../api/agilerl.models.md))"
    lines.append(source + ".")
    if ALGORITHM_KEYWORD in schema:
        titles = {s.get("title"): f for f, s in schemas.schemas.items()}
        lines += ["", "## Algorithm", "", *_algorithm_table(schema[ALGORITHM_KEYWORD], ctx, titles)]
    body = _object_sections(schema, ctx, "##")
    if body:
        lines += ["", "## Fields {#fields}", *body]
    closes = {part.get("$ref", "").removeprefix("#/$defs/") for part in schema.get("allOf", ())}
    listed = _listed_groups(schema, ctx)
    definitions = schema.get("$defs", {})
    if definitions:
        lines += ["", "## Definitions"]
        for name, node in definitions.items():
            lines += _definition(name, node, ctx, name in closes, listed.get(name, ()))
    return "\n".join(lines) + "\n"


def index_page(schemas: SchemaSet) -> str:
    lines = [
        "# Spec reference",
        "",
        "One page per JSON Schema of `schemas/`, generated from the schemas when the site "
        "is built: every field with its type, default, constraints and description, and "
        "the cross-field rules (`x-agilerl-rules`) in words. A manifest is a "
        "[TrainingManifest](manifest.md).",
        "",
        "| Schema | Description |",
        "|---|---|",
    ]
    for file, schema in sorted(schemas.schemas.items()):
        link = f"[{schema.get('title', file)}]({page_name(file)})"
        lines.append(f"| {link} | {cell(schema.get('description', ''))} |")
    return "\n".join(lines) + "\n"


def spec_pages(
    schemas: SchemaSet | None = None, python_names: Iterable[str] = ()
) -> dict[str, str]:
    """Every page of the spec reference, by path below ``reference/specs/``: ``index.md``,
    and one page per schema (the navigation lists the folder: index first, then by name)."""
    schemas = schemas or SchemaSet.load()
    names = set(python_names)
    pages = {"index.md": index_page(schemas)}
    for file in sorted(schemas.schemas):
        pages[page_name(file)] = spec_page(file, schemas, names)
    return pages
