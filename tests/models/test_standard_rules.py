"""The one correspondence between rules written in standard JSON Schema keywords and the
rule kinds the Python models check (agilerl/models/standard_rules.py): every kind reads
back from its standard form as itself, an entry that is not exactly a rule's form is
refused, and what it states is what a standard validator enforces."""

from __future__ import annotations

import jsonschema
import pytest

from agilerl.models.standard_rules import (
    STANDARD_KINDS,
    is_rule_statement,
    node_rules,
    read_rule,
    standard_form,
)

DEFAULTS = {"use_vllm": False, "vllm_config": None, "a": None, "b": None, "mode": "x"}

#: One rule of each kind written in standard keywords.
RULES = [
    {"field": "vllm_config", "requiredIf": "use_vllm"},
    {"anyPositive": ["a", "b"]},
    {"exactlyOne": ["a", "b"]},
    {"flag": "use_vllm", "ignoredWhen": {"mode": ["y"]}, "because": "y runs no vLLM"},
    {"field": "a", "requiredWhen": {"mode": ["y", "z"]}},
    {"field": "a", "forbiddenWhen": {"mode": ["z"]}, "because": "z reads no a"},
    {"exclusive": ["a", "b"]},
]


def test_every_standard_kind_has_a_case_here():
    kinds = {next(k for k in rule if k in STANDARD_KINDS) for rule in RULES}
    assert kinds == set(STANDARD_KINDS)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: next(k for k in r if k in STANDARD_KINDS))
def test_a_rule_reads_back_from_its_standard_form_as_itself(rule):
    entry = standard_form(rule, DEFAULTS.get)
    assert is_rule_statement(entry)
    assert read_rule(entry, DEFAULTS.get) == rule


def test_an_entry_that_is_not_exactly_a_rules_form_is_refused():
    entry = standard_form({"exclusive": ["a", "b"]}, DEFAULTS.get)
    entry = {**entry, "then": {"required": ["a"]}}  # hand-edited: no longer the rule's form
    with pytest.raises(ValueError, match="not the standard form of a rule"):
        read_rule(entry, DEFAULTS.get)


def test_a_sections_choice_of_schema_is_no_rule():
    choice = {"if": {"properties": {"name": {"const": "CQN"}}}, "then": {"$ref": "cqn.json"}}
    assert not is_rule_statement(choice)


@pytest.mark.parametrize(
    ("document", "valid"),
    [
        ({"use_vllm": True, "vllm_config": {}}, True),
        ({"use_vllm": True}, False),
        ({"use_vllm": True, "vllm_config": None}, False),
        ({}, True),  # use_vllm absent: its default, false
    ],
)
def test_a_standard_validator_enforces_what_the_rule_states(document, valid):
    schema = {
        "type": "object",
        "properties": {"use_vllm": {"default": False}, "vllm_config": {"default": None}},
        "allOf": [standard_form(RULES[0], DEFAULTS.get)],
    }
    assert jsonschema.Draft202012Validator(schema).is_valid(document) is valid
    assert node_rules(schema) == [RULES[0]]  # and Python reads the same rule from it
