"""The canonical JSON Schemas at run time, validated with the Python ``jsonschema`` library.

This is the "any other tool" view of a document: the schema alone, with the
``x-agilerl-rules`` keyword implemented as in :mod:`agilerl.models.rules` and
``x-agilerl-renamed`` as in :mod:`agilerl.models.legacy`. The pydantic
models must reach the same verdict on every document (tests hold them to it).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from agilerl.models.legacy import RENAMED_KEYWORD, read_old_keys, renamed_conflicts
from agilerl.models.rules import RULES_KEYWORD, check_rules, schema_defaults
from agilerl.models.standard_rules import is_rule_statement, schema_documents, stated_rule

SCHEMA_BASE_URI = "https://agilerl.dev/schemas/"


def _rules_keyword(
    validator: Any, rules: Any, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    read, read_as = read_old_keys(schema.get(RENAMED_KEYWORD), instance)
    for violation in check_rules(rules, read, schema_defaults(schema)):
        path = [read_as.get(violation.field, violation.field), *violation.at]
        yield ValidationError(violation.message, path=path, instance=violation.value)


def _renamed_keyword(
    validator: Any, renamed: Any, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    """An old spelling given with its new name and another value (the manifest loader
    refuses it: nothing says which value was meant)."""
    for old, message in renamed_conflicts(renamed, instance):
        yield ValidationError(message, path=[old], instance=instance[old])


_STANDARD_IF = Draft202012Validator.VALIDATORS["if"]


def _if_keyword(
    validator: Any, condition: Any, instance: Any, schema: dict
) -> Iterator[ValidationError]:
    """``if`` as the standard has it; where the ``allOf`` entry holding it states a rule of
    the models (agilerl/models/standard_rules.py), its errors, still the standard
    keywords' at the rule's place, say what the rule says (``network.simba must not be
    true when ...``) instead of ``True should not be valid under {'const': True}``."""
    errors = list(_STANDARD_IF(validator, condition, instance, schema))
    stated = stated_rule(schema) if errors and isinstance(instance, dict) else None
    if stated is not None:
        rule, defaults = stated
        violation = next(check_rules([rule], instance, defaults), None)
        if violation is not None:
            for error in errors:
                error.message = violation.message
    yield from errors


#: Draft 2020-12 plus our custom keywords, and the rules stated in standard keywords
#: worded as the rules.
SpecValidator = validators.extend(
    Draft202012Validator,
    {RULES_KEYWORD: _rules_keyword, RENAMED_KEYWORD: _renamed_keyword, "if": _if_keyword},
)


def _without_dialect(doc: dict) -> dict:
    # jsonschema picks the validator class from each resource's "$schema" when a $ref
    # enters it, which would swap SpecValidator for the stock 2020-12 validator and
    # silently drop the custom keyword. Our in-memory copies therefore omit "$schema"
    # (every file declares 2020-12; the registry pins that dialect instead).
    return {key: value for key, value in doc.items() if key != "$schema"}


@cache
def schema_registry() -> Registry:
    """A registry resolving every schema by its ``$id`` (nothing is fetched)."""
    return Registry().with_resources(
        (
            doc["$id"],
            Resource.from_contents(_without_dialect(doc), default_specification=DRAFT202012),
        )
        for doc in schema_documents().values()
    )


@cache
def schema_titles() -> dict[str, str]:
    """Spec title (``MlpSpec``) -> schema file name, for the document-level schemas."""
    return {doc["title"]: name for name, doc in schema_documents().items() if "title" in doc}


def validator_for(spec: str) -> Any:
    """A validator for the spec named by title (``"MlpSpec"``) or file name."""
    name = schema_titles().get(spec, spec)
    try:
        schema = schema_documents()[name]
    except KeyError:
        known = ", ".join(sorted(schema_titles()))
        raise KeyError(f"No schema for {spec!r}. Known specs: {known}.") from None
    return SpecValidator(_without_dialect(schema), registry=schema_registry())


def inline_schema(spec: str) -> dict:
    """A self-contained copy of a spec's schema: every ``$ref`` inlined, and every
    ``allOf`` of shared ``...Fields`` fragments merged into one closed object.

    Same verdicts as the canonical schema; meant for tools that cannot follow ``$ref``
    or do not implement ``unevaluatedProperties`` (hypothesis-jsonschema among them).
    """
    name = schema_titles().get(spec, spec)
    root = schema_documents()[name]
    resolver = schema_registry().resolver(base_uri=root["$id"])
    return _inline(root, resolver)


_DROPPED = {"$schema", "$id", "$defs"}


def _inline(node: Any, resolver: Any) -> Any:
    if isinstance(node, list):
        return [_inline(item, resolver) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    if "$ref" in node:
        resolved = resolver.lookup(node["$ref"])
        out.update(_inline(resolved.contents, resolved.resolver))
    for key, value in node.items():
        if key in _DROPPED or key == "$ref":
            continue
        out[key] = _inline(value, resolver)
    if out.get("unevaluatedProperties") is False and all(
        map(_is_foldable, out.get("allOf", [None]))
    ):
        _merge_fragments(out)
    return out


_CONDITIONAL = {"if", "then", "else", "not", "oneOf", "anyOf", "dependentSchemas"}


def _is_plain_fragment(fragment: Any) -> bool:
    """An object fragment of plain properties, possibly built on other plain fragments
    and stating rules (safe to fold into its user)."""
    return (
        isinstance(fragment, dict)
        and not (_CONDITIONAL & fragment.keys())
        and all(map(_is_foldable, fragment.get("allOf", [])))
    )


def _is_foldable(entry: Any) -> bool:
    """An ``allOf`` entry the folding keeps the meaning of: a plain fragment, or a rule
    stated in standard keywords (agilerl/models/standard_rules.py), which stays an
    ``allOf`` entry of the folded object (it constrains values; it declares no key)."""
    return _is_plain_fragment(entry) or is_rule_statement(entry)


def _merge_fragments(schema: dict) -> None:
    """Fold ``allOf`` object fragments into ``schema`` and close it with
    ``additionalProperties: false`` (equivalent to ``unevaluatedProperties: false``)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    rules: list[Any] = []
    stated: list[Any] = []  # rules in standard keywords: kept as allOf entries
    for fragment in schema.pop("allOf"):
        if is_rule_statement(fragment):
            stated.append(fragment)
            continue
        if "allOf" in fragment:  # a fragment built on another fragment: flatten it first
            fragment = {**fragment, "unevaluatedProperties": False}
            _merge_fragments(fragment)
            stated += fragment.get("allOf", [])
        properties.update(fragment.get("properties", {}))
        required += fragment.get("required", [])
        rules += fragment.get(RULES_KEYWORD, [])
    properties.update(schema.get("properties", {}))
    required += schema.get("required", [])
    rules += schema.get(RULES_KEYWORD, [])
    schema["properties"] = properties
    if required:
        schema["required"] = list(dict.fromkeys(required))
    if rules:
        schema[RULES_KEYWORD] = rules
    if stated:
        schema["allOf"] = stated
    del schema["unevaluatedProperties"]
    schema["additionalProperties"] = False


def bundle_schema(spec: str) -> dict:
    """A spec's schema and every schema it references, as one self-contained document.

    Each referenced file becomes ``$defs/<file name>`` and every ``$ref`` is rewritten to
    point there, so the result means exactly what the canonical files mean, for tools
    that cannot follow references across files.
    """
    root_name = schema_titles().get(spec, spec)
    documents = schema_documents()
    needed, pending = set(), [root_name]
    while pending:
        name = pending.pop()
        if name not in needed:
            needed.add(name)
            pending += [ref.split("#")[0] for ref in _refs(documents[name]) if ref.split("#")[0]]
    root = _rewrite(documents[root_name], root_name, root_name)
    root["$defs"] = {
        **root.get("$defs", {}),
        **{
            name: _rewrite(_without_id(documents[name]), name, root_name)
            for name in sorted(needed - {root_name})
        },
    }
    return root


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _without_id(doc: dict) -> dict:
    return {key: value for key, value in doc.items() if key not in ("$id", "$schema")}


def _rewrite(node: Any, file: str, root: str) -> Any:
    """Rewrite the ``$ref``s of ``file`` to point into the bundle ``root``'s ``$defs``."""
    if isinstance(node, list):
        return [_rewrite(item, file, root) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _rewrite(value, file, root) for key, value in node.items()}
    if isinstance(node.get("$ref"), str):
        target, _, pointer = node["$ref"].partition("#")
        target = target or file
        out["$ref"] = f"#{pointer}" if target == root else f"#/$defs/{target}{pointer}"
    return out
