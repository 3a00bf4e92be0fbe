"""The ``x-agilerl-rules`` schema keyword: cross-field rules JSON Schema cannot express.

The keyword lives in ``schemas/`` next to the properties it constrains, so the schema
stays the single source of truth. It is implemented once per language: here (used by
the generated pydantic models through :class:`agilerl.models.base.SpecBase` and by the
Python ``jsonschema`` validator in :mod:`agilerl.schema`) and in
``codegen/node/rules.mjs`` (ajv). Both follow this definition:

The keyword's value is a list of rules; each rule is one of

* ``{"field": F, "atMost": B}``   every measure of F is <= the value of B
* ``{"field": F, "below": B}``    every measure of F is <  the value of B
* ``{"field": F, "within": [L, H]}``  L <= every measure of F <= H
* ``{"sameLength": [F1, F2, ...]}``  the listed arrays all have the length of F1
* ``{"field": F, "requiredIf": G}``  F is not null when G is ``true``

with an optional ``"measure"`` on the first three: ``"value"`` (default; F itself),
``"length"`` (the length of array F) or ``"items"`` (each item of array F).

A property absent from the instance takes its schema ``default``. A rule whose
operands are null, missing or of the wrong type is skipped: type errors are reported
by the ordinary keywords, and a rule never reports the same problem twice.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

RULES_KEYWORD = "x-agilerl-rules"

_MISSING = object()


@dataclass(frozen=True)
class RuleViolation:
    """One broken rule, reported at ``field`` (a property of the checked object)."""

    field: str
    value: Any
    message: str


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    )


def _measures(value: Any, measure: str) -> list[Any] | None:
    """The numbers a rule compares for ``value``, or None when the rule does not apply."""
    if measure == "value":
        return [value] if _is_number(value) else None
    if not isinstance(value, list):
        return None
    if measure == "length":
        return [len(value)]
    return [item for item in value if _is_number(item)]


def _number(value: float) -> str:
    """A number as JSON (and the Node implementation) writes it: 10.0 -> "10"."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


_SUBJECT = {"value": "{f}", "length": "length of {f}", "items": "every item of {f}"}


def check_rules(
    rules: list[Mapping[str, Any]], lookup: Callable[[str], Any]
) -> Iterator[RuleViolation]:
    """Yield the violations of ``rules``; ``lookup(name)`` gives a property's value.

    ``lookup`` must already apply the schema default for absent properties.
    """
    for rule in rules:
        if "sameLength" in rule:
            yield from _check_same_length(rule["sameLength"], lookup)
            continue
        if "requiredIf" in rule:
            yield from _check_required_if(rule["field"], rule["requiredIf"], lookup)
            continue
        field, measure = rule["field"], rule.get("measure", "value")
        value = lookup(field)
        found = _measures(value, measure)
        if not found:
            continue
        if "within" in rule:
            low, high = rule["within"]
            checks = [(low, operator.ge, ">="), (high, operator.le, "<=")]
        elif "atMost" in rule:
            checks = [(rule["atMost"], operator.le, "<=")]
        else:
            checks = [(rule["below"], operator.lt, "<")]
        subject = _SUBJECT[measure].format(f=field)
        for bound_name, holds, expected in checks:
            bound = lookup(bound_name)
            if not _is_number(bound):
                continue
            bad = [x for x in found if not holds(x, bound)]
            if bad:
                yield RuleViolation(
                    field,
                    value,
                    f"{subject} must be {expected} {bound_name} ({_number(bound)}), "
                    f"got {_number(bad[0])}",
                )


def _check_required_if(
    field: str, flag: str, lookup: Callable[[str], Any]
) -> Iterator[RuleViolation]:
    if lookup(flag) is True and lookup(field) is None:
        yield RuleViolation(field, None, f"{field} is required when {flag} is true")


def _check_same_length(fields: list[str], lookup: Callable[[str], Any]) -> Iterator[RuleViolation]:
    first = fields[0]
    reference = lookup(first)
    if not isinstance(reference, list):
        return
    for other in fields[1:]:
        value = lookup(other)
        if isinstance(value, list) and len(value) != len(reference):
            yield RuleViolation(
                other,
                value,
                f"{other} must have one entry per entry of {first} ({len(reference)}), "
                f"got {len(value)}",
            )


def schema_lookup(instance: Mapping[str, Any], schema: Mapping[str, Any]) -> Callable[[str], Any]:
    """A ``lookup`` over a JSON instance that falls back to the schema's defaults."""
    properties = schema.get("properties", {})

    def lookup(name: str) -> Any:
        value = instance.get(name, _MISSING)
        if value is _MISSING:
            return properties.get(name, {}).get("default")
        return value

    return lookup
