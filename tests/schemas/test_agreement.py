"""Property-based agreement between the schema and the generated pydantic models.

Documents are generated from each spec's schema (hypothesis-jsonschema over the
self-contained ``inline_schema``). The Python ``jsonschema`` validator (with the
``x-agilerl-rules`` keyword) and pydantic must give the same verdict on every one; then
valid documents are mutated to break one constraint each and both must reject them.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from pydantic import ValidationError

from agilerl.cli.validate import spec_classes
from agilerl.files.schema import inline_schema, schema_titles, validator_for
from agilerl.models.legacy import RENAMED_KEYWORD
from agilerl.models.rules import RULES_KEYWORD

#: Specs whose schema makes one section depend on another (if/then) are beyond
#: hypothesis-jsonschema; their agreement is tested on document corpora instead
#: (tests/schemas/test_manifest_cross_language.py).
CONDITIONAL_SPECS = {"TrainingManifest", "NetworkSection"}
SPECS = sorted(
    title for title in schema_titles() if title in spec_classes() and title not in CONDITIONAL_SPECS
)
EXAMPLES = 40
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    # The same examples on every run: a random draw of 15 OfflineEnvSpec documents once
    # held no valid one, and the mutation test's "some mutant was checked" failed in CI.
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def pydantic_errors(spec: str, doc: Any) -> list[dict] | None:
    try:
        spec_classes()[spec].model_validate(doc)
    except ValidationError as error:
        return error.errors()
    return None


# --- steering random documents towards the cross-field rules -------------------------------


def _branch(schema: dict, value: Any) -> dict | None:
    """The subschema of a union that applies to ``value`` (by ``arch`` tag or type)."""
    for key in ("oneOf", "anyOf"):
        for option in schema.get(key, []):
            if isinstance(value, dict) and option.get("type") == "object":
                tag = option.get("properties", {}).get("arch", {}).get("const")
                if tag is None or value.get("arch") == tag:
                    return option
    return schema if "properties" in schema else None


def _clamp(value: Any, low: Any, high: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if isinstance(low, int) and not isinstance(low, bool):
        value = max(value, low)
    if isinstance(high, int) and not isinstance(high, bool):
        value = min(value, high)
    return value


# Steering never grows a list past this: a random min_hidden_layers of 10**6 must not
# turn into a million-item document (it simply stays invalid).
MAX_STEERED_LENGTH = 8


def steer(schema: dict, doc: Any) -> Any:
    """Nudge a random document towards satisfying the rules of every object in it.

    Random documents almost never satisfy rules such as "every hidden layer size lies
    between min_mlp_nodes and max_mlp_nodes", so without this few valid network specs
    would be generated. Steering only moves values; it does not decide validity (both
    validators still judge the result, and may reject it).
    """
    node = _branch(schema, doc)
    if node is None or not isinstance(doc, dict):
        return doc
    for key, sub in node.get("properties", {}).items():
        if key in doc:
            doc[key] = steer(sub, doc[key])
    defaults = {k: v.get("default") for k, v in node.get("properties", {}).items()}

    def get(name: str) -> Any:
        return doc.get(name, defaults.get(name))

    for rule in node.get(RULES_KEYWORD, []):
        if "sameLength" in rule:
            first, *others = rule["sameLength"]
            if isinstance(get(first), list) and len(get(first)) <= MAX_STEERED_LENGTH:
                for other in others:
                    if isinstance(get(other), list) and get(other):
                        doc[other] = (get(other) * len(get(first)))[: len(get(first))]
            continue
        if "anyPositive" in rule:
            continue  # random weights are rarely all zero: nothing to steer
        if "exactlyOne" in rule:
            given = [name for name in rule["exactlyOne"] if get(name) is not None]
            for name in given[1:]:
                doc.pop(name)  # the first source given stays
            continue
        if "forbiddenWhen" in rule:
            doc.pop(rule["field"], None)  # left out, it holds whatever its conditions
            continue
        if "exclusive" in rule:
            for other in rule["exclusive"][1:]:
                doc.pop(other, None)
            continue
        if "requiredWhen" in rule:
            examples = node.get("properties", {}).get(rule["field"], {}).get("examples")
            if get(rule["field"]) is None and examples:
                doc[rule["field"]] = copy.deepcopy(examples[0])  # given, it holds
            continue
        if "ignoredWhen" in rule:
            continue  # a flag set beside a value that ignores it: both verdicts judge it
        field, measure = rule["field"], rule.get("measure", "value")
        low, high = rule.get("within") or [None, rule.get("atMost") or rule.get("below")]
        low, high = get(low) if low else None, get(high)
        if "below" in rule and isinstance(high, int):
            high -= 1
        value = get(field)
        if measure == "value" and field in doc:
            doc[field] = _clamp(value, low, high)
        elif measure == "items" and isinstance(value, list):
            doc[field] = [_clamp(item, low, high) for item in value]
        elif measure == "length" and isinstance(value, list) and value:
            length = min(_clamp(len(value), low, high), MAX_STEERED_LENGTH)
            doc[field] = (value * length)[:length]
    return doc


def without_old_spellings(schema: Any) -> Any:
    """``schema`` without the deprecated old spellings of keys (``patternProperties``
    marked ``deprecated``): they are not fields of the specs; the manifest loader reads
    them under their new names (agilerl/models/legacy.py, tested on manifests)."""
    if isinstance(schema, list):
        return [without_old_spellings(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: without_old_spellings(value) for key, value in schema.items()}
    patterns = {
        key: value
        for key, value in out.pop("patternProperties", {}).items()
        if not value.get("deprecated")
    }
    out.pop(RENAMED_KEYWORD, None)
    return {**out, "patternProperties": patterns} if patterns else out


def documents(spec: str) -> st.SearchStrategy:
    schema = without_old_spellings(inline_schema(spec))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = from_schema(schema)
    return st.one_of(raw, raw.map(lambda doc: steer(schema, copy.deepcopy(doc))))


# --- agreement on generated documents -------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS)
def test_generated_documents_get_the_same_verdict(spec):
    validator = validator_for(spec)
    verdicts = {"valid": 0, "invalid": 0}

    @SETTINGS
    @given(documents(spec))
    def check(doc):
        schema_ok = validator.is_valid(doc)
        errors = pydantic_errors(spec, doc)
        assert schema_ok == (errors is None), (
            doc,
            errors,
            [e.message for e in validator.iter_errors(doc)],
        )
        if errors:
            # Structurally the document came from the schema: the only thing pydantic
            # may object to is a cross-field rule.
            assert {e["type"] for e in errors} == {"cross_field"}, errors
        verdicts["valid" if schema_ok else "invalid"] += 1

    check()
    assert verdicts["valid"] > 0, f"no valid {spec} was generated: the agreement proves little"


# --- mutations: each breaks one constraint; both validators must reject -----------------------


def _at(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _replace(doc: Any, path: tuple, value: Any) -> Any:
    out = copy.deepcopy(doc)
    _at(out, path[:-1])[path[-1]] = value
    return out


def _accepts_null(schema: dict) -> bool:
    options = schema.get("anyOf") or schema.get("oneOf") or [schema]
    return any(
        o.get("type") == "null" or o == {} or "type" not in o and "const" not in o for o in options
    )


def _value_mutations(schema: dict) -> Iterator[tuple[str, Any]]:
    kind = schema.get("type")
    if "anyOf" in schema or "oneOf" in schema or kind is None and "const" not in schema:
        if not _accepts_null(schema):
            yield "null where null is not allowed", None
        return
    if "const" in schema:
        yield "wrong tag", f"not-{schema['const']}"
        return
    if "enum" in schema:
        yield "not one of the choices", "NotAChoice"
    if kind in ("integer", "number"):
        yield "number as a string", "8"
        yield "boolean for a number", True
        if kind == "integer":
            yield "fraction for an integer", 1.5
        if "minimum" in schema:
            yield "below minimum", schema["minimum"] - 1
        if "exclusiveMinimum" in schema:
            yield "at exclusiveMinimum", schema["exclusiveMinimum"]
        if "maximum" in schema:
            yield "above maximum", schema["maximum"] + 1
    elif kind == "boolean":
        yield "integer for a boolean", 1
    elif kind == "string":
        yield "number for a string", 5
        if schema.get("minLength", 0) >= 1:
            yield "empty string", ""
    elif kind == "array":
        yield "scalar for an array", "x"
        if schema.get("minItems", 0) >= 1:
            yield "empty array", []
        if schema.get("items", {}).get("type") == "integer":
            yield "string item", ["8"]
    if kind != "null" and not _accepts_null(schema):
        yield "null", None


def mutants(schema: dict, doc: Any, path: tuple = ()) -> Iterator[tuple[str, Any]]:
    """Every single-constraint violation reachable in ``doc``: (description, path, new value)."""
    node = _branch(schema, doc)
    if node is None or not isinstance(doc, dict):
        return
    if node.get("additionalProperties") is False:
        yield f"{path}: unknown key", path + ("not_a_field",), "x"
    for name in node.get("required", []):
        yield f"{path}: missing required {name}", path + (name,), _DELETE
    for name, sub in node.get("properties", {}).items():
        if name not in doc:
            continue
        for what, value in _value_mutations(sub):
            yield f"{path + (name,)}: {what}", path + (name,), value
        yield from mutants(sub, doc[name], path + (name,))


_DELETE = object()


def apply(doc: Any, path: tuple, value: Any) -> Any:
    if value is _DELETE:
        out = copy.deepcopy(doc)
        del _at(out, path[:-1])[path[-1]]
        return out
    return _replace(doc, path, value)


@pytest.mark.parametrize("spec", SPECS)
def test_mutated_documents_are_rejected_by_both(spec):
    schema = inline_schema(spec)
    validator = validator_for(spec)
    counts = {"mutants": 0}

    @settings(SETTINGS, max_examples=15)
    @given(documents(spec))
    def check(doc):
        if not validator.is_valid(doc):
            return
        for what, path, value in mutants(schema, doc):
            mutant = apply(doc, path, value)
            assert not validator.is_valid(mutant), f"mutation did not break the schema: {what}"
            assert pydantic_errors(spec, mutant) is not None, f"pydantic accepted: {what}: {mutant}"
            counts["mutants"] += 1

    check()
    assert counts["mutants"] > 0
