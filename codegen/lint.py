"""Schema lint: what the generator and the meta-schema do not check.

Run as ``python -m codegen.lint [--fix-ranges] [schemas_dir]``; exits 1 listing every
problem (``--fix-ranges`` first rewrites the manifest's derived rl_hp_selection clauses).
Checks, per file under ``schemas/``:

* valid against the draft 2020-12 meta-schema, declares that ``$schema``, an ``$id``
  equal to its published URL, a ``title`` and a ``description``;
* every object is closed (``additionalProperties: false``, or
  ``unevaluatedProperties: false`` for specs built from ``allOf`` fragments); a shared
  ``...Fields`` fragment may stay open only because every user closes it; an
  explicitly open map (``additionalProperties: true`` and no ``properties``) is the one
  deliberate exception;
* every ``default`` validates against its own subschema (the generator copies
  defaults without checking them);
* titles are unique across all files (the generator silently renames duplicates);
* every ``required`` name is a declared property (of the object, its ``allOf``
  fragments, or every branch of its union);
* discriminated unions have ``type: object``, require the tag, and every branch
  declares the tag ``const``;
* every ``x-agilerl-rules`` rule is well formed (``codegen/rules.schema.json``, the
  published meta-schema of the vocabulary: only the kinds JSON Schema cannot state) and
  names properties of its own object that have a default or are required; a kind that
  standard keywords state is refused there, with the ``allOf`` entry to write instead;
* every ``allOf`` entry stating a rule in standard keywords (``if`` / ``then``, no
  ``$ref``) is exactly the standard form of a rule (``agilerl/models/standard_rules.py``),
  read with the defaults of its object, and names properties as above;
* the manifest's ``mutation.rl_hp_selection`` clauses (one ``if``/``then`` per
  algorithm) name exactly the algorithm's numeric, non-nullable hyperparameters and
  ``$ref`` each one's own schema for ``min`` and ``max``, with the manifest's own bound
  on it where it has one (``algorithm.properties.batch_size``): the names are the one
  thing written twice, so they are checked here (:func:`range_clauses` gives the
  expected clause).

Strict-mode compilation by ajv is the other half of the lint; the ``schemas`` nox
session runs it (``node codegen/node/validate.mjs --compile-only``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from agilerl.files.schema import SCHEMA_BASE_URI, SpecValidator
from agilerl.models.rules import RULES_KEYWORD, rule_operands
from agilerl.models.standard_rules import (
    STANDARD_KINDS,
    is_rule_statement,
    read_rule,
    standard_form,
)

DIALECT = "https://json-schema.org/draft/2020-12/schema"

# The keyword's own shape, shared with the ajv keyword definition (codegen/node/keywords.mjs).
RULE_SCHEMA = json.loads(
    (Path(__file__).with_name("rules.schema.json")).read_text(encoding="utf-8")
)


def _walk(node: Any, pointer: str = "#") -> Iterator[tuple[str, dict]]:
    """Every subschema (dict) in a schema document, with its JSON pointer."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in (
                "default",
                "examples",
                "const",
                "enum",
                RULES_KEYWORD,
                "x-agilerl-algorithm",
                "x-agilerl-renamed",
            ):
                continue  # data, not subschemas
            yield from _walk(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{pointer}/{index}")


def _is_object_schema(node: dict) -> bool:
    return node.get("type") == "object" or "properties" in node


def _in_condition(pointer: str) -> bool:
    """Inside an if/then/else/not: constraints on an object described elsewhere."""
    return any(part in ("if", "then", "else", "not") for part in pointer.split("/"))


def _is_fragment(node: dict) -> bool:
    """A shared, deliberately open ``...Fields`` fragment (closed by every spec using it)."""
    return node.get("title", "").endswith("Fields") and ("properties" in node or "allOf" in node)


def _is_closed(node: dict) -> bool:
    return node.get("additionalProperties") is False or node.get("unevaluatedProperties") is False


def lint(folder: Path) -> list[str]:
    docs = {
        path.name: json.loads(path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.schema.json"))
    }
    problems: list[str] = []
    registry = Registry().with_resources(
        (doc.get("$id", name), Resource.from_contents(doc, default_specification=DRAFT202012))
        for name, doc in docs.items()
    )
    titles: dict[str, str] = {}
    allof_targets: dict[str, list[bool]] = {}  # fragment ref -> closedness of each user

    for name, doc in docs.items():
        where = name
        meta_errors = list(Draft202012Validator(Draft202012Validator.META_SCHEMA).iter_errors(doc))
        problems += [f"{where}: not a valid 2020-12 schema: {e.message}" for e in meta_errors]
        if meta_errors:
            continue  # the checks below assume a well-formed schema
        if doc.get("$schema") != DIALECT:
            problems.append(f"{where}: $schema must be {DIALECT}")
        if doc.get("$id") != SCHEMA_BASE_URI + name:
            problems.append(f"{where}: $id must be {SCHEMA_BASE_URI + name}")
        for key in ("title", "description"):
            if not doc.get(key):
                problems.append(f"{where}: missing {key}")
        resolver = registry.resolver(base_uri=doc.get("$id", name))

        for pointer, node in _walk(doc):
            at = f"{name}{pointer[1:]}"
            conditional = _in_condition(pointer)
            if "title" in node and pointer.count("/properties/") == 0:
                if node["title"] in titles:
                    problems.append(
                        f"{at}: title {node['title']!r} also used at {titles[node['title']]}"
                    )
                titles.setdefault(node["title"], at)
            if "$ref" in node:
                try:
                    resolver.lookup(node["$ref"])
                except Unresolvable:
                    problems.append(f"{at}: $ref {node['$ref']!r} does not resolve")
                    continue
            for sub in node.get("allOf", []):
                if "$ref" in sub:
                    target = resolver.lookup(sub["$ref"])
                    key = json.dumps(target.contents, sort_keys=True)
                    # A fragment may build on another fragment; closing happens further up.
                    allof_targets.setdefault(key, []).append(
                        node.get("unevaluatedProperties") is False or _is_fragment(node)
                    )
            if "default" in node:
                subschema = {k: v for k, v in node.items() if k != "default"}
                validator = SpecValidator(subschema, registry=registry, _resolver=resolver)
                for error in _errors_or_none(validator, node["default"]):
                    problems.append(
                        f"{at}: default {node['default']!r} violates its schema: {error.message}"
                    )
            if "required" in node and not conditional:
                problems += _check_required(at, node, resolver)
            if "discriminator" in node:
                problems += _check_union(at, node, resolver)
            if RULES_KEYWORD in node:
                problems += _check_rules(at, node, resolver)
            if any(map(is_rule_statement, node.get("allOf", []))):
                problems += _check_stated_rules(at, node, resolver)

        for pointer, node in _walk(doc):
            if _in_condition(pointer):
                continue  # if/then/else/not narrow a closed object; they need not close one
            if (
                not _is_object_schema(node)
                or _is_closed(node)
                or "oneOf" in node
                or "anyOf" in node
            ):
                continue
            if node.get("additionalProperties") is True and "properties" not in node:
                continue  # an explicitly open map
            key = json.dumps(node, sort_keys=True)
            users = allof_targets.get(key)
            if _is_fragment(node):
                continue  # fragment; checked below once all users are known
            if users is None:
                problems.append(
                    f"{name}{pointer[1:]}: object is not closed (additionalProperties: false)"
                )

    if MANIFEST in docs:
        problems += _check_range_clauses(docs[MANIFEST], registry)

    for name, doc in docs.items():
        for pointer, node in _walk(doc):
            if _is_fragment(node):
                users = allof_targets.get(json.dumps(node, sort_keys=True), [])
                if not users or not all(users):
                    problems.append(
                        f"{name}{pointer[1:]}: fragment must be used only through allOf by "
                        "schemas that close it with unevaluatedProperties: false"
                    )
    return problems


MANIFEST = "manifest.schema.json"


def _numeric(node: dict, resolver: Any) -> bool:
    """A plain number or integer (through ``$ref``s); a nullable one is not mutable."""
    while "$ref" in node and "type" not in node:
        resolved = resolver.lookup(node["$ref"])
        node, resolver = resolved.contents, resolved.resolver
    return node.get("type") in ("integer", "number")


def _hyperparameters(ref: str, resolver: Any) -> dict[str, str]:
    """Numeric hyperparameters of an algorithm's ``...Fields`` fragment -> the ``$ref``
    of the schema that declares each (a fragment's own properties win over the ones it
    builds on, as in the generated classes)."""
    resolved = resolver.lookup(ref)
    node, inner = resolved.contents, resolved.resolver
    base = ref.split("#")[0]
    found: dict[str, str] = {}
    for fragment in node.get("allOf", []):
        if "$ref" not in fragment:  # a rule in standard keywords (agilerl/models/standard_rules.py)
            continue
        target = fragment["$ref"]
        if target.startswith("#"):
            target = base + target
        found.update(_hyperparameters(target, inner))
    for name, prop in node.get("properties", {}).items():
        found.pop(name, None)
        if _numeric(prop, inner):
            found[name] = f"{ref}/properties/{name}"
    return found


def manifest_bounds(manifest: dict) -> dict[str, dict]:
    """The manifest's own bounds on algorithm hyperparameters (``properties.algorithm``'s
    properties besides ``name``: ``batch_size`` at most 10**9), as keywords a value of
    the hyperparameter must also hold."""
    properties = manifest["properties"]["algorithm"]["properties"]
    return {
        key: {word: value for word, value in prop.items() if word != "description"}
        for key, prop in properties.items()
        if key != "name"
    }


def range_clauses(manifest: dict, registry: Registry) -> list[dict]:
    """The ``if``/``then`` clauses the manifest schema must hold, one per algorithm: each
    name of ``mutation.rl_hp_selection`` is a numeric hyperparameter of the algorithm
    and its ``min`` and ``max`` are values that hyperparameter accepts, within the
    manifest's own bounds (:func:`manifest_bounds`)."""
    resolver = registry.resolver(base_uri=manifest["$id"])
    bounds = manifest_bounds(manifest)
    clauses = []
    for branch in manifest["properties"]["algorithm"]["oneOf"]:
        name = branch["properties"]["name"]["const"]
        refs = _hyperparameters(branch["allOf"][0]["$ref"], resolver)
        values = {key: {"$ref": ref, **bounds.get(key, {})} for key, ref in refs.items()}
        ranges = {
            key: {"type": "object", "properties": {"min": value, "max": value}}
            for key, value in values.items()
        }
        selection = {"type": "object", "properties": ranges, "additionalProperties": False}
        # "type" on every object, and null spelt out, for ajv's strict mode.
        mutation = {
            "anyOf": [
                {"type": "object", "properties": {"rl_hp_selection": selection}},
                {"type": "null"},
            ]
        }
        algorithm = {"type": "object", "properties": {"name": {"enum": [name]}}}
        clauses.append(
            {
                "if": {
                    "type": "object",
                    "properties": {"algorithm": {**algorithm, "required": ["name"]}},
                    "required": ["algorithm"],
                },
                "then": {"properties": {"mutation": mutation}},
            }
        )
    return clauses


def _is_range_clause(clause: dict) -> bool:
    return "mutation" in clause.get("then", {}).get("properties", {})


def _clause_name(clause: dict) -> str:
    return clause["if"]["properties"]["algorithm"]["properties"]["name"]["enum"][0]


def _clause_ranges(clause: dict) -> dict:
    return clause["then"]["properties"]["mutation"]["anyOf"][0]["properties"]["rl_hp_selection"][
        "properties"
    ]


def _check_range_clauses(manifest: dict, registry: Registry) -> list[str]:
    written = [clause for clause in manifest.get("allOf", []) if _is_range_clause(clause)]
    expected = {_clause_name(clause): clause for clause in range_clauses(manifest, registry)}
    fix = "(python -m codegen.lint --fix-ranges rewrites them)"
    problems = []
    for clause in written:
        try:
            name = _clause_name(clause)
        except (KeyError, IndexError, TypeError):
            problems.append(f"{MANIFEST}: a mutation clause of unexpected shape {fix}")
            continue
        want = expected.pop(name, None)
        if want is None:
            problems.append(f"{MANIFEST}: rl_hp_selection clause for unknown algorithm {name!r}")
        elif clause != want:
            have, need = set(_clause_ranges(clause)), set(_clause_ranges(want))
            problems.append(
                f"{MANIFEST}: rl_hp_selection clause for {name} differs from the algorithm's "
                f"numeric hyperparameters (missing {sorted(need - have)}, extra "
                f"{sorted(have - need)}, or a wrong $ref or shape) {fix}"
            )
    problems += [
        f"{MANIFEST}: no rl_hp_selection clause for {name} {fix}" for name in sorted(expected)
    ]
    return problems


def fix_ranges(folder: Path) -> None:
    """Rewrite the manifest schema's rl_hp_selection clauses from the algorithm schemas."""
    path = folder / MANIFEST
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.schema.json")]
    registry = Registry().with_resources(
        (doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012)) for doc in docs
    )
    manifest = json.loads(path.read_text(encoding="utf-8"))
    kept = [clause for clause in manifest["allOf"] if not _is_range_clause(clause)]
    manifest["allOf"] = kept + range_clauses(manifest, registry)
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _errors_or_none(validator: Any, instance: Any) -> list[Any]:
    try:
        return list(validator.iter_errors(instance))
    except Unresolvable:
        return []  # the broken $ref itself is reported where it is written


def _declared(node: dict, resolver: Any) -> set[str] | None:
    """Property names an object schema declares (its own and its allOf fragments'); for a
    union, the names every branch declares. None when unknowable (a broken $ref)."""
    try:
        if "$ref" in node:
            node = resolver.lookup(node["$ref"]).contents
        names = set(node.get("properties", {}))
        for fragment in node.get("allOf", []):
            names |= _declared(fragment, resolver) or set()
        branches = [_declared(branch, resolver) for branch in node.get("oneOf", [])]
    except Unresolvable:
        return None
    if branches:
        names |= set.intersection(*(b or set() for b in branches))
    return names


def _check_required(at: str, node: dict, resolver: Any) -> list[str]:
    # ajv's strictRequired is off (it cannot see a union tag declared per branch), so
    # this is where a `required` naming no declared property is caught.
    declared = _declared(node, resolver)
    if declared is None:
        return []
    return [
        f"{at}: required {name!r} is not a declared property"
        for name in node["required"]
        if name not in declared
    ]


def _check_union(at: str, node: dict, resolver: Any) -> list[str]:
    tag = node["discriminator"].get("propertyName")
    problems = []
    if node.get("type") != "object":
        problems.append(f"{at}: a discriminated union needs type: object")
    if tag not in node.get("required", []):
        problems.append(f"{at}: a discriminated union must require its tag {tag!r}")
    for index, branch in enumerate(node.get("oneOf", [])):
        try:
            target = resolver.lookup(branch["$ref"]).contents if "$ref" in branch else branch
        except Unresolvable:
            continue  # reported where the $ref is written
        if "const" not in target.get("properties", {}).get(tag, {}):
            problems.append(f"{at}/oneOf/{index}: branch must declare {tag!r} as a const")
    return problems


def _properties(node: dict, resolver: Any) -> tuple[dict, set[str]]:
    """The properties an object schema declares and those it requires: those of its
    allOf fragments, then its own (which win)."""
    properties: dict = {}
    required: set[str] = set()
    for fragment in node.get("allOf", []):
        try:
            target = resolver.lookup(fragment["$ref"]).contents if "$ref" in fragment else fragment
        except Unresolvable:
            continue  # reported where the $ref is written
        more, needed = _properties(target, resolver)
        properties.update(more)
        required |= needed
    properties.update(node.get("properties", {}))
    return properties, required | set(node.get("required", []))


def _check_rules(at: str, node: dict, resolver: Any) -> list[str]:
    rules = node[RULES_KEYWORD]
    properties, required = _properties(node, resolver)
    defaults = {name: prop.get("default") for name, prop in properties.items()}
    stated = [
        f"{at}: rule {json.dumps(rule)} is one JSON Schema can state: write it in standard "
        f"keywords, as the allOf entry {json.dumps(standard_form(rule, defaults.get))}"
        for rule in rules
        if isinstance(rule, dict) and any(kind in rule for kind in STANDARD_KINDS)
    ]
    if stated:
        return stated
    errors = list(Draft202012Validator(RULE_SCHEMA).iter_errors(rules))
    if errors:
        return [f"{at}: malformed {RULES_KEYWORD}: {e.message}" for e in errors]
    return _check_operands(at, rules, properties, required)


def _check_stated_rules(at: str, node: dict, resolver: Any) -> list[str]:
    properties, required = _properties(node, resolver)
    defaults = {name: prop.get("default") for name, prop in properties.items()}
    rules, problems = [], []
    for index, entry in enumerate(node["allOf"]):
        if is_rule_statement(entry):
            try:
                rules.append(read_rule(entry, defaults.get))
            except ValueError as error:
                problems.append(f"{at}/allOf/{index}: {error}")
    return problems + _check_operands(at, rules, properties, required)


def _check_operands(
    at: str, rules: list[Any], properties: dict[str, Any], required: set[str]
) -> list[str]:
    problems = []
    for rule in rules:
        # the properties it reads (a path's first name: "network" of "network.simba")
        names = sorted(rule_operands(rule))
        for field in names:
            if field not in properties:
                problems.append(f"{at}: rule {rule} names {field!r}, not a property of this object")
            elif field not in required and "default" not in properties[field]:
                problems.append(
                    f"{at}: rule {rule} names {field!r}, which has no default and is optional"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fix = "--fix-ranges" in args
    args = [arg for arg in args if arg != "--fix-ranges"]
    folder = Path(args[0] if args else "schemas")
    if fix:
        fix_ranges(folder)
    problems = lint(folder)
    for problem in problems:
        print(problem, file=sys.stderr)
    count = len(list(folder.glob("*.schema.json")))
    print(f"schema lint: {count} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
