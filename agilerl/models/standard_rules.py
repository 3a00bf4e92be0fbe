"""Cross-field rules written in standard JSON Schema keywords, read back as rules.

A rule JSON Schema can state is written in the schema in standard keywords, as an entry
of the object's ``allOf`` (``if`` / ``then``), so that every validator in every language
enforces it. The Python models enforce the same rule through the rule kinds of
:mod:`agilerl.models.rules`, whose checks give the located message (``network.simba must
not be true when ...``). This module is the one correspondence between the two:

* :func:`standard_form` writes a rule in standard keywords, given the defaults of the
  properties it reads (an absent property takes its default, as the Python check reads it);
* :func:`read_rule` finds the rule an ``allOf`` entry states and refuses an entry that is
  not exactly the standard form of that rule, so the statement every validator reads and
  the check Python runs cannot drift apart.

The kinds written this way (each documented with its form in
docs/reference/rules-vocabulary.md):

* ``{"field": F, "requiredIf": G}``: ``if G is true then F is given and not null``;
* ``{"anyPositive": [F1, F2, ...]}``: ``if F2, ... are numbers <= 0 then F1 is not``
  (reported at F1);
* ``{"exactlyOne": [F1, F2]}``: ``if F1 is given then F2 is not, else if F2 is not
  given then F1 is`` (both given is reported at F2, neither at F1, as the Python check
  reports them; one if/then/else would blame the same property for both);
* ``{"flag": P, "ignoredWhen": {Q: [V, ...]}, "because": ...}``: ``if some Q holds one
  of its values then P is not true``, ``because`` as the entry's ``description``;
* ``{"field": F, "requiredWhen": {Q: [V, ...], ...}}``: ``if every Q holds one of its
  values then F is given and not null``;
* ``{"field": F, "forbiddenWhen": {Q: [V, ...], ...}, "because": ...}``: ``if every Q
  holds one of its values then F is null or absent``, ``because`` as the description;
* ``{"exclusive": [F1, F2]}``: ``if F1 is given then F2 is not`` (reported at F2).

A ``requiredWhen`` whose one condition is a flag being ``true`` states what a
``requiredIf`` states, in the same words: it reads back as the ``requiredIf``.

An ``allOf`` entry whose ``then`` names a ``$ref`` chooses a section's schema (the
manifest's ``environment`` by ``algorithm.name``); it is no rule and is left alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from importlib import resources
from typing import Any

#: The rule kinds that are written in standard keywords, never in ``x-agilerl-rules``.
STANDARD_KINDS = (
    "requiredIf",
    "anyPositive",
    "exactlyOne",
    "ignoredWhen",
    "requiredWhen",
    "forbiddenWhen",
    "exclusive",
)

_NULL = {"type": "null"}
_NOT_NULL = {"not": _NULL}
_NON_POSITIVE = {"type": "number", "maximum": 0}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _json(value: Any) -> str:
    """Equality as JSON has it: ``true`` is not ``1``, key order does not matter."""
    return json.dumps(value, sort_keys=True)


def _held(value: Any, keys: Iterable[str]) -> Any:
    """The keys below a property, read as written (absent, or not an object: null)."""
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _object(properties: dict[str, Any], required: Iterable[str] = ()) -> dict[str, Any]:
    required = list(required)
    return {"properties": properties, **({"required": required} if required else {})}


def _given(field: str, default: Any) -> dict[str, Any]:
    """``field`` is not null (an absent one reads as its default)."""
    return _object({field: _NOT_NULL}, [field] if default is None else [])


def _not_given(field: str, default: Any) -> dict[str, Any]:
    """``field`` is null or absent (an absent one reads as its default)."""
    return _object({field: _NULL}, [] if default is None else [field])


def _path_holds(path: str, values: list[Any], default: Callable[[str], Any]) -> dict[str, Any]:
    """``path`` (a property, then keys below it as written) holds one of ``values``."""
    head, *keys = path.split(".")
    schema: dict[str, Any] = {"const": values[0]} if len(values) == 1 else {"enum": values}
    for key in reversed(keys):
        schema = {"type": "object", **_object({key: schema}, [key])}
    absent = _held(default(head), keys)
    absent_holds = any(_json(absent) == _json(value) for value in values)
    return _object({head: schema}, [] if absent_holds else [head])


def _all_hold(conditions: Mapping[str, list[Any]], default: Callable[[str], Any]) -> dict:
    """Every path of ``conditions`` holds one of its values (one object schema)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for path, values in conditions.items():
        holds = _path_holds(path, values, default)
        if properties.keys() & holds["properties"].keys():
            raise ValueError(f"two conditions below one property: {dict(conditions)}")
        properties.update(holds["properties"])
        required += holds.get("required", [])
    return _object(properties, required)


#: The guard of a key below a property: only an object holds keys. (``properties`` alone
#: would do for a validator, but ajv's strict mode wants its ``type`` beside it.)
_WHERE_OBJECT = {"type": "object"}


def _not_true(path: str, default: Callable[[str], Any]) -> dict[str, Any]:
    """``path`` is not ``true``."""
    head, *keys = path.split(".")
    schema: dict[str, Any] = {"not": {"const": True}}
    for key in reversed(keys):
        schema = {"if": _WHERE_OBJECT, "then": {**_WHERE_OBJECT, **_object({key: schema})}}
    return _object({head: schema}, [head] if _held(default(head), keys) is True else [])


def standard_form(rule: Mapping[str, Any], default: Callable[[str], Any]) -> dict[str, Any]:
    """``rule`` as one ``allOf`` entry of standard keywords; ``default(name)`` gives the
    default of a property of the checked object (None where it has none)."""
    if "requiredIf" in rule:
        flag, field = rule["requiredIf"], rule["field"]
        condition = _object({flag: {"const": True}}, [] if default(flag) is True else [flag])
        return {"if": condition, "then": _given(field, default(field))}
    if "anyPositive" in rule:
        first, *others = rule["anyPositive"]

        def absent_non_positive(name: str) -> bool:
            value = default(name)
            return _is_number(value) and value <= 0

        condition = _object(
            {name: _NON_POSITIVE for name in others},
            [name for name in others if not absent_non_positive(name)],
        )
        then = _object(
            {first: {"not": _NON_POSITIVE}}, [first] if absent_non_positive(first) else []
        )
        return {"if": condition, "then": then}
    if "exactlyOne" in rule:
        if len(rule["exactlyOne"]) != 2:
            raise ValueError(f"exactlyOne in standard keywords takes two properties: {rule}")
        first, second = rule["exactlyOne"]
        return {
            "if": _given(first, default(first)),
            "then": _not_given(second, default(second)),
            "else": {
                "if": _not_given(second, default(second)),
                "then": _given(first, default(first)),
            },
        }
    if "ignoredWhen" in rule:
        conditions = [
            _path_holds(path, values, default) for path, values in rule["ignoredWhen"].items()
        ]
        entry: dict[str, Any] = {"description": rule["because"]} if "because" in rule else {}
        entry["if"] = conditions[0] if len(conditions) == 1 else {"anyOf": conditions}
        entry["then"] = _not_true(rule["flag"], default)
        return entry
    if "requiredWhen" in rule:
        field = rule["field"]
        return {
            "if": _all_hold(rule["requiredWhen"], default),
            "then": _given(field, default(field)),
        }
    if "forbiddenWhen" in rule:
        field = rule["field"]
        entry = {"description": rule["because"]} if "because" in rule else {}
        entry["if"] = _all_hold(rule["forbiddenWhen"], default)
        entry["then"] = _not_given(field, default(field))
        return entry
    if "exclusive" in rule:
        if len(rule["exclusive"]) != 2:
            raise ValueError(f"exclusive in standard keywords takes two properties: {rule}")
        first, second = rule["exclusive"]
        return {"if": _given(first, default(first)), "then": _not_given(second, default(second))}
    raise ValueError(f"no standard form for the rule {json.dumps(rule)}")


def _only(mapping: Any, what: str) -> tuple[str, Any]:
    if not isinstance(mapping, Mapping) or len(mapping) != 1:
        raise ValueError(f"expected one property in {what}")
    return next(iter(mapping.items()))


def _leaf_path(schema: Mapping[str, Any], leaf: Callable[[Any], bool]) -> tuple[str, Any]:
    """The dotted path of nested ``properties`` down to the subschema ``leaf`` accepts."""
    keys = []
    while True:
        if schema.get("if") == _WHERE_OBJECT:
            schema = schema["then"]
        key, schema = _only(schema.get("properties"), "a path")
        keys.append(key)
        if leaf(schema):
            return ".".join(keys), schema


def _conditions(condition: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The paths and values of :func:`_all_hold`'s schema."""
    found: dict[str, list[Any]] = {}
    for head, schema in condition["properties"].items():
        path, leaf = _leaf_path(
            {"properties": {head: schema}}, lambda sub: "const" in sub or "enum" in sub
        )
        found[path] = [leaf["const"]] if "const" in leaf else list(leaf["enum"])
    return found


def _parse(entry: Mapping[str, Any]) -> dict[str, Any]:
    condition, then = entry["if"], entry["then"]
    if "else" in entry:
        return {
            "exactlyOne": [
                _only(condition["properties"], "if")[0],
                _only(then["properties"], "then")[0],
            ]
        }
    field, check = _only(then.get("properties"), "then")
    if check == _NOT_NULL:
        conditions = _conditions(condition)
        (flag, values), *others = conditions.items()
        if not others and "." not in flag and values == [True]:
            return {"field": field, "requiredIf": flag}
        return {"field": field, "requiredWhen": conditions}
    if check == {"not": _NON_POSITIVE}:
        return {"anyPositive": [field, *condition["properties"]]}
    if check == _NULL:
        given, tested = _only(condition["properties"], "if")
        if tested == _NOT_NULL:
            return {"exclusive": [given, field]}
        rule = {"field": field, "forbiddenWhen": _conditions(condition)}
        return {**rule, "because": entry["description"]} if "description" in entry else rule
    flag, _ = _leaf_path(then, lambda schema: schema == {"not": {"const": True}})
    ignored: dict[str, list[Any]] = {}
    for holds in condition.get("anyOf", [condition]):
        path, leaf = _leaf_path(holds, lambda schema: "const" in schema or "enum" in schema)
        ignored[path] = [leaf["const"]] if "const" in leaf else list(leaf["enum"])
    rule: dict[str, Any] = {"flag": flag, "ignoredWhen": ignored}
    if "description" in entry:
        rule["because"] = entry["description"]
    return rule


def is_rule_statement(entry: Any) -> bool:
    """Whether an ``allOf`` entry states a rule (not a section's choice of schema)."""
    return isinstance(entry, Mapping) and "if" in entry and '"$ref"' not in _json(entry)


def read_rule(entry: Mapping[str, Any], default: Callable[[str], Any]) -> dict[str, Any]:
    """The rule an ``allOf`` entry states; a ValueError when the entry is not exactly
    :func:`standard_form` of a rule (the Python check would then not be the rule every
    other validator enforces)."""
    try:
        rule = _parse(entry)
    except (KeyError, TypeError, AttributeError, ValueError):
        rule = None
    if rule is None or _json(standard_form(rule, default)) != _json(entry):
        expected = (
            ""
            if rule is None
            else f"; as {json.dumps(rule)} it reads {_json(standard_form(rule, default))}"
        )
        raise ValueError(
            f"allOf entry {_json(entry)} is not the standard form of a rule "
            f"(agilerl/models/standard_rules.py){expected}"
        )
    return rule


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of each property of an object schema (None where it has none)."""
    return {
        name: prop.get("default") if isinstance(prop, Mapping) else None
        for name, prop in schema.get("properties", {}).items()
    }


def node_rules(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rules an object schema states in standard keywords (its ``allOf`` entries),
    read with the defaults of its own properties."""
    defaults = schema_defaults(node)
    return [
        read_rule(entry, defaults.get)
        for entry in node.get("allOf", ())
        if is_rule_statement(entry)
    ]


@cache
def schema_documents() -> dict[str, dict]:
    """Every packaged schema, keyed by file name (``mlp.schema.json``)."""
    folder = resources.files("agilerl") / "schemas"
    return {
        entry.name: json.loads(entry.read_text(encoding="utf-8"))
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".schema.json")
    }


def _titled(node: Any) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        if isinstance(node.get("title"), str) and node.get("type") == "object":
            yield node["title"], node
        for value in node.values():
            yield from _titled(value)
    elif isinstance(node, list):
        for item in node:
            yield from _titled(item)


@cache
def titled_rules() -> dict[str, tuple[dict[str, Any], ...]]:
    """The rules each titled object schema states in standard keywords, by title (the
    generated class's name), for the titles that state any."""
    found: dict[str, tuple[dict[str, Any], ...]] = {}
    for document in schema_documents().values():
        for title, node in _titled(document):
            rules = node_rules(node)
            if rules:
                found[title] = tuple(rules)
    return found


def _objects_with_rules(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        if any(map(is_rule_statement, node.get("allOf", ()))):
            yield node
        for value in node.values():
            yield from _objects_with_rules(value)
    elif isinstance(node, list):
        for item in node:
            yield from _objects_with_rules(item)


@cache
def _stated_rules() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    found = {}
    for document in schema_documents().values():
        for node in _objects_with_rules(document):
            defaults = schema_defaults(node)
            for entry in filter(is_rule_statement, node["allOf"]):
                found[_json(entry)] = (read_rule(entry, defaults.get), defaults)
    return found


def stated_rule(entry: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The rule a packaged schema's ``allOf`` entry states, with the defaults of the
    object it is in (for a validator to word a failing entry as the rule); None for any
    other schema."""
    if not is_rule_statement(entry):
        return None
    return _stated_rules().get(_json(entry))
