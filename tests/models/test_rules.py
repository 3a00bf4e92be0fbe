"""``compile_acceptance``: the fast "no rule is broken" test of a set of ``x-agilerl-rules``.

Validation asks it first and runs the rule checks (which word the errors) only when it
answers False, so it must never answer True where a check reports something; and it must
answer True on ordinary valid instances, or it would speed nothing up.
"""

from __future__ import annotations

import itertools
import math

import pytest

from agilerl.models.rules import compile_acceptance, compile_rules

#: One rule of every kind and measure, over operands a, b, c.
RULES = [
    {"field": "a", "atMost": "b"},
    {"field": "a", "below": "b"},
    {"field": "a", "within": ["b", "c"]},
    {"field": "a", "measure": "length", "atMost": "b"},
    {"field": "a", "measure": "length", "within": ["b", "c"]},
    {"field": "a", "measure": "items", "below": "b"},
    {"field": "a", "measure": "items", "within": ["b", "c"]},
    {"sameLength": ["a", "b", "c"]},
    {"field": "a", "requiredIf": "b"},
    {"anyPositive": ["a", "b", "c"]},
    {"exactlyOne": ["a", "b", "c"]},
    {"field": "a", "key": "k", "sameAs": "b"},
    {"flag": "a.k", "ignoredWhen": {"b.k": [1, "x"], "c": [True]}},
    {"flag": "a", "ignoredWhen": {"b": [True, 2.5], "c.k": [2]}, "because": "why"},
]

_ABSENT = object()
#: Values an operand may hold: absent, null, booleans, numbers (NaN, infinities), text,
#: lists (empty, of numbers, mixed) and objects (for sameAs and the paths of ignoredWhen).
VALUES = [
    _ABSENT,
    None,
    True,
    False,
    0,
    1,
    2,
    2.5,
    -1.0,
    math.nan,
    math.inf,
    "x",
    [],
    [1],
    [1, 5],
    [1, "x"],
    [True, 2],
    {"k": 1},
    {"k": 2},
    {"k": True},
    {"k": "x"},
    {},
]


def _instances():
    for a, b, c in itertools.product(VALUES, repeat=3):
        yield {k: v for k, v in zip("abc", (a, b, c), strict=True) if v is not _ABSENT}


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: "-".join(map(str, rule.values())))
@pytest.mark.parametrize("defaults", [{}, {"b": 3, "c": 1}], ids=["no-defaults", "defaults"])
def test_accepts_only_what_the_checks_pass(rule, defaults):
    accepts = compile_acceptance([rule], defaults)
    (check,) = compile_rules([rule], defaults)
    accepted = 0
    for instance in _instances():
        if accepts(instance):
            accepted += 1
            assert check(instance.get) == [], (rule, instance)
    assert accepted > 0  # it does let valid instances through


@pytest.mark.parametrize(
    ("rule", "instance"),
    [
        ({"field": "a", "atMost": "b"}, {"a": 1, "b": 2}),
        ({"field": "a", "below": "b"}, {"a": 1.5, "b": 2}),
        ({"field": "a", "within": ["b", "c"]}, {"a": 2, "b": 1, "c": 3}),
        ({"field": "a", "measure": "length", "within": ["b", "c"]}, {"a": [64], "b": 1, "c": 3}),
        ({"field": "a", "measure": "items", "within": ["b", "c"]}, {"a": [64], "b": 8, "c": 500}),
        ({"sameLength": ["a", "b"]}, {"a": [1, 2], "b": [3, 4]}),
        ({"field": "a", "requiredIf": "b"}, {"a": {"x": 1}, "b": True}),
        ({"anyPositive": ["a", "b"]}, {"a": 0.0, "b": 0.2}),
        ({"exactlyOne": ["a", "b"]}, {"b": "data.h5"}),
        ({"exactlyOne": ["a", "b"]}, {"a": "cartpole/random-v0", "b": None}),
        ({"field": "a", "key": "k", "sameAs": "b"}, {"a": {"k": 8}, "b": {"k": 8}}),
        ({"flag": "a.k", "ignoredWhen": {"b.k": [True]}}, {"a": {"k": True}, "b": {"k": False}}),
        ({"flag": "a.k", "ignoredWhen": {"b.k": [True]}}, {"a": {"k": False}, "b": {"k": True}}),
    ],
)
def test_accepts_ordinary_valid_instances(rule, instance):
    assert compile_acceptance([rule])(instance) is True


def test_several_rules_are_one_test():
    rules = [{"field": "lo", "atMost": "hi"}, {"field": "n", "measure": "length", "atMost": "hi"}]
    accepts = compile_acceptance(rules, {"hi": 3})
    assert accepts({"lo": 1, "n": [1, 2]})
    assert not accepts({"lo": 4})  # the first rule, against the default of hi
    assert not accepts({"lo": 1, "n": [1, 2, 3, 4]})  # the second one


def test_no_rules_accept_everything():
    assert compile_acceptance([])({"anything": math.nan})


def test_an_ignored_flag_is_reported_at_its_path_naming_the_first_condition():
    rule = {"flag": "net.simba", "ignoredWhen": {"algo.recurrent": [True], "net.arch": ["mlp"]}}
    (check,) = compile_rules([rule])
    found = {"net": {"simba": True, "arch": "mlp"}, "algo": {"recurrent": True}}
    (violation,) = check(found.get)
    assert violation.path == ("net", "simba") and violation.value is True
    assert violation.message == (
        "net.simba must not be true when algo.recurrent is true: it would be ignored"
    )
    assert compile_acceptance([rule])(found) is False
    # JSON equality: 1 is no true, and a flag of 1 is no flag
    assert check({"net": {"simba": True}, "algo": {"recurrent": 1}}.get) == []
    assert check({"net": {"simba": 1, "arch": "mlp"}}.get) == []
    (second,) = check({"net": {"simba": True, "arch": "mlp"}}.get)
    assert (
        second.message == 'net.simba must not be true when net.arch is "mlp": it would be ignored'
    )


@pytest.mark.parametrize(
    ("instance", "path", "message"),
    [
        ({}, ("a",), "one of a, b, c is required, none is given"),
        ({"a": None, "c": None}, ("a",), "one of a, b, c is required, none is given"),
        ({"a": "x", "c": "y"}, ("c",), "give only one of a, b, c: a is given too"),
        ({"b": 0, "c": False}, ("c",), "give only one of a, b, c: b is given too"),
    ],
)
def test_exactly_one_reports_none_at_the_first_and_a_second_where_it_is(instance, path, message):
    rule = {"exactlyOne": ["a", "b", "c"]}
    (check,) = compile_rules([rule])
    (violation,) = check(instance.get)
    assert (violation.path, violation.message) == (path, message)
    assert compile_acceptance([rule])(instance) is False
