"""The ``x-agilerl-rules`` schema keyword: cross-field rules JSON Schema cannot express.

The keyword lives in ``schemas/`` next to the properties it constrains, so the schema
stays the single source of truth. It is implemented once per language: here (used by
the generated pydantic models through :class:`agilerl.models.base.SpecBase` and by the
Python ``jsonschema`` validator in :mod:`agilerl.files.schema`) and in
``codegen/node/rules.mjs`` (ajv). Both follow this definition:

(The kinds JSON Schema can state, ``requiredIf`` to ``exclusive`` below, are checked here
too, but a schema writes them in standard keywords, as ``allOf`` entries that
:mod:`agilerl.models.standard_rules` reads back into these rules; the schema lint refuses
them in the keyword, whose meta-schema ``codegen/rules.schema.json`` lists only the
comparisons: docs/reference/rules-vocabulary.md.)

The keyword's value is a list of rules; each rule is one of

* ``{"field": F, "atMost": B}``   every measure of F is <= the value of B
* ``{"field": F, "below": B}``    every measure of F is <  the value of B
* ``{"field": F, "within": [L, H]}``  L <= every measure of F <= H
* ``{"sameLength": [F1, F2, ...]}``  the listed arrays all have the length of F1
* ``{"field": F, "requiredIf": G}``  F is not null when G is ``true``
* ``{"anyPositive": [F1, F2, ...]}``  at least one of the listed numbers is above 0
  (reported at F1)
* ``{"exactlyOne": [F1, F2, ...]}``  exactly one of the listed properties is given (not
  null): two sources of one thing, e.g. an offline dataset's file or Minari id.
  Reported at F1 when none is, at the second given one when several are. Null here
  means "not given", so this rule is not skipped for null operands
* ``{"field": F, "key": K, "sameAs": G}``  where object F holds K, it equals the K of
  object G (reported at F; skipped where G does not hold K, defaults apart): one setting
  written in two sections, e.g. PPO's ``algorithm.num_envs`` and ``environment.num_envs``
* ``{"field": F, "increasing": true}``  the numbers of array F strictly increase
  (reported at F, naming the first pair that does not)
* ``{"flag": P, "ignoredWhen": {Q: [V, ...], ...}}``  flag P is not ``true`` where some
  Q holds one of the values listed for it (a string, number or boolean, compared as JSON
  compares them: ``true`` is not ``1``): what P asks for would then be ignored, e.g. a
  recurrent PPO's ``network.simba``. Reported at P, naming the first such Q; an optional
  ``"because"`` says why.
* ``{"field": F, "requiredWhen": {Q: [V, ...], ...}}``  F is not null where every Q
  holds one of the values listed for it (a string, number, boolean or null; an absent
  Q without a default reads as null), e.g. a reasoning LLM environment's reward file.
  Reported at F, naming each Q and the value it holds.
* ``{"field": F, "forbiddenWhen": {Q: [V, ...], ...}}``  F is null (or left out) where
  every Q holds one of its values; an optional ``"because"`` says why. Reported at F.
* ``{"exclusive": [F1, F2, ...]}``  at most one of the listed properties is not null
  (reported at the second one given, naming the first).

with an optional ``"measure"`` on the first three: ``"value"`` (default; F itself),
``"length"`` (the length of array F) or ``"items"`` (each item of array F).

P and Q are *paths*: a property, or a property and the keys below it joined by dots
(``network.simba``: the ``simba`` of the object ``network``). Below the property, a path
reads the document as written (a key an object does not hold is absent; no default).

A property absent from the instance takes its schema ``default`` (baked into each compiled
check, which reads the instance with ``get(name, default)``, e.g. ``dict.get``). A rule whose
operands are null, missing or of the wrong type is skipped: type errors are reported
by the ordinary keywords, and a rule never reports the same problem twice.
"""

from __future__ import annotations

import itertools
import json
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

RULES_KEYWORD = "x-agilerl-rules"


@dataclass(frozen=True)
class RuleViolation:
    """One broken rule, reported at ``field`` (a property of the checked object), or at
    the keys ``at`` below it."""

    field: str
    value: Any
    message: str
    at: tuple[str, ...] = ()

    @property
    def path(self) -> tuple[str, ...]:
        """Where the violation is reported, from the checked object."""
        return (self.field, *self.at)


def rule_operands(rule: Mapping[str, Any]) -> set[str]:
    """The properties of the checked object a rule reads."""
    if "ignoredWhen" in rule:
        return {path.split(".")[0] for path in (rule["flag"], *rule["ignoredWhen"])}
    if "sameLength" in rule:
        return set(rule["sameLength"])
    if "anyPositive" in rule:
        return set(rule["anyPositive"])
    if "exactlyOne" in rule:
        return set(rule["exactlyOne"])
    if "exclusive" in rule:
        return set(rule["exclusive"])
    names = {rule["field"]}
    for key in ("requiredWhen", "forbiddenWhen"):
        names.update(path.split(".")[0] for path in rule.get(key, ()))
    for key in ("atMost", "below", "requiredIf", "sameAs"):
        if key in rule:
            names.add(rule[key])
    names.update(rule.get("within", ()))
    return names


def _is_number(value: Any) -> bool:
    kind = type(value)  # the common cases first: rules run on every validated spec
    if kind is int:
        return True
    if kind is float:
        return value == value  # False only for NaN
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and not (isinstance(value, float) and math.isnan(value))
    )


_NONE: list[RuleViolation] = []  # shared "no violation" result; never appended to


def _measures(value: Any, measure: str) -> tuple[Any, ...] | list[Any] | None:
    """The numbers a rule compares for ``value``, or None when the rule does not apply."""
    if measure == "value":
        return (value,) if _is_number(value) else None
    if not isinstance(value, list):
        return None
    if measure == "length":
        return [len(value)]
    return [item for item in value if _is_number(item)]


def _number(value: float) -> str:
    """A number as JSON (and the Node implementation) writes it: 10.0 -> "10"."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


_SUBJECT = {"value": "{f}", "length": "length of {f}", "items": "every item of {f}"}


#: ``get(name, default)``: a property of the checked object, ``default`` when absent.
Getter = Callable[[str, Any], Any]
#: A compiled rule: ``get`` -> its violations (an empty list when it holds).
Check = Callable[[Getter], list[RuleViolation]]


def compile_rules(
    rules: Iterable[Mapping[str, Any]], defaults: Mapping[str, Any] | None = None
) -> tuple[Check, ...]:
    """Each rule as a check, decided once (a spec's rules run on every validation), with
    the ``defaults`` of the properties it reads baked in (None for one without)."""
    defaults = defaults or {}
    return tuple(_compile(rule, defaults.get) for rule in rules)


def check_rules(
    rules: Iterable[Mapping[str, Any]], instance: Mapping[str, Any], defaults: Mapping[str, Any]
) -> Iterator[RuleViolation]:
    """Yield the violations of ``rules`` in ``instance``, absent properties taking
    ``defaults``."""
    for check in compile_rules(rules, defaults):
        yield from check(instance.get)


#: ``accepts(instance)``: True only when no rule of a set is broken; False when one may be.
Acceptance = Callable[[Mapping[str, Any]], bool]

#: Python's comparison for each bound keyword, as ``_compile`` applies it (value OP bound).
_COMPARISONS = {"atMost": "<=", "below": "<"}


def compile_acceptance(
    rules: Iterable[Mapping[str, Any]], defaults: Mapping[str, Any] | None = None
) -> Acceptance:
    """All of ``rules`` as one test that an instance breaks none of them.

    Specs are validated far more often than they are wrong, so the common case is made
    cheap: the rules become the lines of one generated function, each rule a comparison
    inline instead of a call to its check. It answers True only where none of the checks
    of :func:`compile_rules` would report anything (an operand that is null or not a
    comparable number makes it answer False, never True, unless the rule is thereby
    skipped); on False the checks decide, and report. The rule definitions are the ones
    above; only their "holds" case is written here.
    """
    constants: dict[str, Any] = {}
    return compile_test(acceptance_lines(rules, defaults or {}, "instance", constants), constants)


def acceptance_lines(
    rules: Iterable[Mapping[str, Any]],
    defaults: Mapping[str, Any],
    instance: str,
    constants: dict[str, Any],
) -> list[str]:
    """The lines of :func:`compile_acceptance`'s test for the object named ``instance``:
    each rule's "return False" where it may be broken. Values they need go in
    ``constants`` (the generated code's globals)."""
    constants["_held"] = _held
    lines: list[str] = []

    def get(name: str) -> str:
        key = f"_d{len(constants)}"
        constants[key] = defaults.get(name)
        return f"{instance}.get({name!r}, {key})"

    for rule in rules:
        if "sameLength" in rule:
            first, *others = rule["sameLength"]
            lines.append(f"r = {get(first)}")
            lines.append("if isinstance(r, list):")
            for other in others:
                lines.append(f"    o = {get(other)}")
                lines.append("    if isinstance(o, list) and len(o) != len(r): return False")
        elif "requiredIf" in rule:
            flag, field = get(rule["requiredIf"]), get(rule["field"])
            lines.append(f"if {flag} is True and {field} is None: return False")
        elif "anyPositive" in rule:
            values = [get(name) for name in rule["anyPositive"]]
            held = " or ".join(f"(v := {value}) is None or v > 0" for value in values)
            lines.append(f"if not ({held}): return False")
        elif "exactlyOne" in rule:
            given = " + ".join(f"({get(name)} is not None)" for name in rule["exactlyOne"])
            lines.append(f"if {given} != 1: return False")
        elif "sameAs" in rule:
            key = repr(rule["key"])
            lines.append(f"a = _held({get(rule['field'])}, {key})")
            lines.append(f"b = _held({get(rule['sameAs'])}, {key})")
            lines.append("if not (a is None or b is None or a == b): return False")
        elif "increasing" in rule or any(key in rule for key in _CONDITIONAL):
            check = f"_r{len(constants)}"
            constants[check] = _compile(rule, defaults.get)
            lines.append(f"if {check}({instance}.get): return False")
        elif "ignoredWhen" in rule:
            # The flag is rarely true: only then is the rule's own check asked.
            head, *keys = rule["flag"].split(".")
            flag = get(head)
            for key in keys:
                flag = f"_held({flag}, {key!r})"
            check = f"_r{len(constants)}"
            constants[check] = _compile(rule, defaults.get)
            lines.append(f"if {flag} is True and {check}({instance}.get): return False")
        else:
            if "within" in rule:
                low, high = rule["within"]
                bounds = ((low, ">="), (high, "<="))
            else:
                kind = next(k for k in _COMPARISONS if k in rule)
                bounds = ((rule[kind], _COMPARISONS[kind]),)
            measure = rule.get("measure", "value")
            lines.append(f"v = {get(rule['field'])}")
            for name, op in bounds:
                lines.append(f"b = {get(name)}")
                if measure == "value":
                    lines.append(f"if not (v is None or b is None or v {op} b): return False")
                elif measure == "length":
                    lines.append(
                        f"if isinstance(v, list) and b is not None and not len(v) {op} b: "
                        "return False"
                    )
                else:  # items
                    lines.append("if isinstance(v, list) and b is not None:")
                    lines.append("    for x in v:")
                    lines.append(f"        if not x {op} b: return False")
    return lines


def compile_test(lines: list[str], constants: dict[str, Any]) -> Acceptance:
    """``lines`` (which ``return False`` where something may be wrong) as a function of
    one object, ``instance``: True when they get through; False also when an operand
    does not compare (then the checks decide)."""
    if not lines:
        return lambda instance: True
    body = "\n".join(f"        {line}" for line in lines)
    source = (
        "def accepts(instance):\n"
        "    try:\n"
        f"{body}\n"
        "    except Exception:  # an operand that does not compare: the checks decide\n"
        "        return False\n"
        "    return True\n"
    )
    exec(compile(source, "<x-agilerl-rules>", "exec"), constants)  # noqa: S102  (our own text)
    return constants["accepts"]


def _compile(rule: Mapping[str, Any], default: Callable[[str], Any]) -> Check:
    if "sameLength" in rule:
        return _same_length_check(rule["sameLength"], default)
    if "requiredIf" in rule:
        return _required_if_check(rule["field"], rule["requiredIf"], default)
    if "anyPositive" in rule:
        return _any_positive_check(rule["anyPositive"], default)
    if "exactlyOne" in rule:
        return _exactly_one_check(rule["exactlyOne"], default)
    if "increasing" in rule:
        return _increasing_check(rule["field"], default)
    if "sameAs" in rule:
        return _same_as_check(rule["field"], rule["key"], rule["sameAs"], default)
    if "requiredWhen" in rule:
        return _conditional_check(rule["field"], rule["requiredWhen"], True, None, default)
    if "forbiddenWhen" in rule:
        return _conditional_check(
            rule["field"], rule["forbiddenWhen"], False, rule.get("because"), default
        )
    if "exclusive" in rule:
        return _exclusive_check(rule["exclusive"], default)
    if "ignoredWhen" in rule:
        return _ignored_flag_check(rule["flag"], rule["ignoredWhen"], rule.get("because"), default)
    if "within" in rule:
        low, high = rule["within"]
        checks = ((low, operator.ge, ">="), (high, operator.le, "<="))
    elif "atMost" in rule:
        checks = ((rule["atMost"], operator.le, "<="),)
    else:
        checks = ((rule["below"], operator.lt, "<"),)
    return _bounds_check(rule["field"], rule.get("measure", "value"), checks, default)


# The checks below run on every validated spec, so each is a closure specialised to its
# rule, returning the shared empty ``_NONE`` when the rule holds (the usual case).


def _bounds_check(
    field: str,
    measure: str,
    checks: tuple[tuple[str, Callable[[Any, Any], bool], str], ...],
    default: Callable[[str], Any],
) -> Check:
    subject = _SUBJECT[measure].format(f=field)
    bounds = tuple(
        (name, default(name), holds, f"{subject} must be {expected} {name}")
        for name, holds, expected in checks
    )
    by_value = measure == "value"
    field_default = default(field)

    def check(get: Getter) -> list[RuleViolation]:
        value = get(field, field_default)
        if by_value:
            # type() first: the common cases without a call (NaN is no number: x == x)
            kind = type(value)
            if not (kind is int or (kind is float and value == value) or _is_number(value)):
                return _NONE
            found: Any = (value,)
        else:
            found = _measures(value, measure)
            if not found:
                return _NONE
        violations = _NONE
        for bound_name, bound_default, holds, prefix in bounds:
            bound = get(bound_name, bound_default)
            kind = type(bound)
            if not (kind is int or (kind is float and bound == bound) or _is_number(bound)):
                continue
            for x in found:
                if not holds(x, bound):
                    message = f"{prefix} ({_number(bound)}), got {_number(x)}"
                    violations = [*violations, RuleViolation(field, value, message)]
                    break
        return violations

    return check


def _required_if_check(field: str, flag: str, default: Callable[[str], Any]) -> Check:
    message = f"{field} is required when {flag} is true"
    flag_default, field_default = default(flag), default(field)

    def check(get: Getter) -> list[RuleViolation]:
        if get(flag, flag_default) is True and get(field, field_default) is None:
            return [RuleViolation(field, None, message)]
        return _NONE

    return check


def _any_positive_check(fields: list[str], default: Callable[[str], Any]) -> Check:
    message = f"at least one of {', '.join(fields)} must be above 0, all are 0 or below"
    operands = tuple((name, default(name)) for name in fields)

    def check(get: Getter) -> list[RuleViolation]:
        values = [get(name, value) for name, value in operands]
        for value in values:
            if not _is_number(value) or value > 0:
                return _NONE
        return [RuleViolation(fields[0], values[0], message)]

    return check


def _exactly_one_check(fields: list[str], default: Callable[[str], Any]) -> Check:
    listed = ", ".join(fields)
    none_given = f"one of {listed} is required, none is given"
    operands = tuple((name, default(name)) for name in fields)

    def check(get: Getter) -> list[RuleViolation]:
        given = [
            (name, value)
            for name, fallback in operands
            if (value := get(name, fallback)) is not None
        ]
        if len(given) == 1:
            return _NONE
        if not given:
            return [RuleViolation(fields[0], None, none_given)]
        (first, _), (second, value) = given[0], given[1]
        message = f"give only one of {listed}: {first} is given too"
        return [RuleViolation(second, value, message)]

    return check


def _increasing_check(field: str, default: Callable[[str], Any]) -> Check:
    field_default = default(field)

    def check(get: Getter) -> list[RuleViolation]:
        value = get(field, field_default)
        if not isinstance(value, list):
            return _NONE
        numbers = [item for item in value if _is_number(item)]
        for i, (a, b) in enumerate(itertools.pairwise(numbers)):
            if not a < b:
                message = (
                    f"{field} must strictly increase, got {_number(a)} then {_number(b)} "
                    f"(items {i} and {i + 1})"
                )
                return [RuleViolation(field, value, message)]
        return _NONE

    return check


def _held(section: Any, key: str) -> Any:
    """``section[key]`` as the document wrote it: from a mapping, or from a spec the walk
    already built from one (only a field it was given), else None."""
    if type(section) is dict or isinstance(section, Mapping):
        return section.get(key)
    given = getattr(section, "model_fields_set", ())
    return getattr(section, key, None) if key in given else None


def _same_as_check(field: str, key: str, other: str, default: Callable[[str], Any]) -> Check:
    subject, reference = f"{field}.{key}", f"{other}.{key}"
    field_default, other_default = default(field), default(other)

    def check(get: Getter) -> list[RuleViolation]:
        value = _held(get(field, field_default), key)
        expected = _held(get(other, other_default), key)
        if not (_is_number(value) and _is_number(expected)) or value == expected:
            return _NONE
        message = f"{subject} must equal {reference} ({_number(expected)}), got {_number(value)}"
        return [RuleViolation(field, value, message)]

    return check


def _same_json(value: Any, expected: Any) -> bool:
    """``value == expected`` as JSON compares them: a boolean equals only a boolean."""
    if type(value) is bool or type(expected) is bool:
        return value is expected
    return value == expected and _is_number(value) == _is_number(expected)


def _json_text(value: Any) -> str:
    """A schema constant as JSON (and the Node implementation) writes it."""
    if type(value) is bool:
        return "true" if value else "false"
    if _is_number(value):
        return _number(value)
    return json.dumps(value, ensure_ascii=False)


def _reader(path: str, default: Callable[[str], Any]) -> Callable[[Getter], Any]:
    """Reads ``path`` (``network.simba``) of the checked object: its property with the
    property's default, then the keys below it as written."""
    head, *keys = path.split(".")
    head_default = default(head)

    def read(get: Getter) -> Any:
        value = get(head, head_default)
        for key in keys:
            value = _held(value, key)
        return value

    return read


def _ignored_flag_check(
    flag: str,
    conditions: Mapping[str, list[Any]],
    because: str | None,
    default: Callable[[str], Any],
) -> Check:
    head, *keys = flag.split(".")
    read_flag = _reader(flag, default)
    reason = f": {because}" if because else ": it would be ignored"
    tests = tuple(
        (
            _reader(path, default),
            tuple(
                (v, f"{flag} must not be true when {path} is {_json_text(v)}{reason}")
                for v in values
            ),
        )
        for path, values in conditions.items()
    )

    def check(get: Getter) -> list[RuleViolation]:
        if read_flag(get) is not True:
            return _NONE
        for read, expected in tests:
            value = read(get)
            for candidate, message in expected:
                if _same_json(value, candidate):
                    return [RuleViolation(head, True, message, tuple(keys))]
        return _NONE

    return check


#: The rules that apply where their conditions hold (``requiredWhen``, ``forbiddenWhen``).
_CONDITIONAL = ("requiredWhen", "forbiddenWhen", "exclusive")


def _conditional_check(
    field: str,
    conditions: Mapping[str, list[Any]],
    required: bool,
    because: str | None,
    default: Callable[[str], Any],
) -> Check:
    field_default = default(field)
    tests = tuple(
        (path, _reader(path, default), tuple(values)) for path, values in conditions.items()
    )
    reason = f": {because}" if because else ""

    def check(get: Getter) -> list[RuleViolation]:
        value = get(field, field_default)
        if (value is None) is not required:
            return _NONE  # present where required, absent where forbidden: it holds
        held = []
        for path, read, values in tests:
            found = read(get)
            match = next((v for v in values if _same_json(found, v)), _MISSING_VALUE)
            if match is _MISSING_VALUE:
                return _NONE
            held.append(f"{path} is {_json_text(match)}")
        when = " and ".join(held)
        if required:
            return [RuleViolation(field, None, f"{field} is required when {when}")]
        return [RuleViolation(field, value, f"{field} must be left out when {when}{reason}")]

    return check


_MISSING_VALUE = object()


def _exclusive_check(fields: list[str], default: Callable[[str], Any]) -> Check:
    operands = tuple((name, default(name)) for name in fields)

    def check(get: Getter) -> list[RuleViolation]:
        given = [(name, get(name, value)) for name, value in operands]
        given = [(name, value) for name, value in given if value is not None]
        if len(given) < 2:
            return _NONE
        (first, _), (second, value) = given[0], given[1]
        message = f"{second} cannot be given with {first}: give one of {', '.join(fields)}"
        return [RuleViolation(second, value, message)]

    return check


def _same_length_check(fields: list[str], default: Callable[[str], Any]) -> Check:
    first, first_default = fields[0], default(fields[0])
    others = tuple((name, default(name)) for name in fields[1:])

    def check(get: Getter) -> list[RuleViolation]:
        reference = get(first, first_default)
        if not isinstance(reference, list):
            return _NONE
        violations = _NONE
        for other, other_default in others:
            value = get(other, other_default)
            if isinstance(value, list) and len(value) != len(reference):
                message = (
                    f"{other} must have one entry per entry of {first} ({len(reference)}), "
                    f"got {len(value)}"
                )
                violations = [*violations, RuleViolation(other, value, message)]
        return violations

    return check


def schema_defaults(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``default`` of each property of an object schema (None where it has none)."""
    return {
        name: prop.get("default") if isinstance(prop, Mapping) else None
        for name, prop in schema.get("properties", {}).items()
    }
