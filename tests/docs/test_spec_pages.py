"""The spec reference (codegen/docs_specs.py): a page per schema, every field with its
default and constraints, every cross-field rule in words, and links that resolve."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from support import ROOT

from codegen.docs_specs import (
    RULE_WORDS,
    RULES_KEYWORD,
    SchemaSet,
    page_name,
    rule_text,
    spec_pages,
)

SCHEMAS = SchemaSet.load()
PAGES = spec_pages(SCHEMAS)

#: Constraint keywords and the words a page shows for a value of them.
SHOWN = {
    "minimum": "≥ {}",
    "maximum": "≤ {}",
    "exclusiveMinimum": "> {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} character",
    "minItems": "at least {} item",
    "pattern": "{}",
}


def _objects(schema: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The schema and each of its ``$defs``: the objects whose properties a page lists."""
    yield schema
    yield from schema.get("$defs", {}).values()


def _rows(page: str, name: str) -> list[str]:
    return [line for line in page.splitlines() if line.startswith(f"| `{name}` |")]


def _expected(prop: Mapping[str, Any]) -> list[str]:
    """What a property's row must show: its default, and each constraint written on it or
    on a branch of its ``anyOf``/``oneOf``."""
    shown = [json.dumps(prop["default"], ensure_ascii=False)] if "default" in prop else []
    for node in (prop, *prop.get("anyOf", ()), *prop.get("oneOf", ())):
        for keyword, words in SHOWN.items():
            if keyword in node:
                value = node[keyword]
                shown.append(words.format(value if isinstance(value, str) else json.dumps(value)))
    return shown


def test_every_schema_has_a_page_and_the_index_lists_it():
    for file, schema in SCHEMAS.schemas.items():
        page = PAGES[page_name(file)]
        assert page.startswith(f"# {schema['title']}\n"), file
        assert f"]({page_name(file)})" in PAGES["index.md"], file


@pytest.mark.parametrize("file", sorted(SCHEMAS.schemas))
def test_every_property_appears_with_its_default_and_constraints(file):
    page = PAGES[page_name(file)]
    for obj in _objects(SCHEMAS.schemas[file]):
        for name, prop in obj.get("properties", {}).items():
            rows = _rows(page, name)
            assert rows, f"{file}: property {name} has no row"
            missing = [text for text in _expected(prop) if not any(text in row for row in rows)]
            assert not missing, f"{file}: {name} lacks {missing} in {rows}"


def test_required_fields_say_so_and_inherited_fields_name_their_fragment():
    dqn = PAGES["dqn.md"]
    (gamma,) = _rows(dqn, "gamma")
    assert "| `0.99` |" in gamma
    assert "≥ 0.0; ≤ 1.0" in gamma  # from the Gamma definition the field refers to
    assert "(from [RLAlgorithmFields](rl_algorithm.md#def-rlalgorithmfields))" in gamma
    (hidden_size,) = _rows(PAGES["mlp.md"], "hidden_size")
    assert "| required |" in hidden_size


def test_a_shared_field_group_is_listed_once_and_named_where_it_is_used():
    """DQN and CQN share QLearningFields (dqn.schema.json): DQN's page lists each field
    once, the group's section names its fields, and CQN's rows link to it."""
    dqn = PAGES["dqn.md"]
    for name in ("tau", "double", "lr"):
        (row,) = _rows(dqn, name)
        assert "(from [QLearningFields](#def-qlearningfields))" in row
    assert len(_rows(dqn, "gamma")) == 1  # nor the fields the group builds on
    section = dqn.split("### QLearningFields {#def-qlearningfields}")[1]
    assert "Its own fields, `tau`, `double` and `lr`, are listed under [Fields](#fields)" in section
    (cqn_tau,) = _rows(PAGES["cqn.md"], "tau")
    assert "(from [QLearningFields](dqn.md#def-qlearningfields))" in cqn_tau
    # A group whose rules the spec's page shows says where they are.
    network = PAGES["network.md"].split("### NetworkCommonFields")[1].split("###")[0]
    assert "and its rules under Rules" in network


def _rules(node: Any) -> Iterator[Mapping[str, Any]]:
    """Every rule of ``x-agilerl-rules`` anywhere in a schema."""
    if isinstance(node, Mapping):
        yield from node.get(RULES_KEYWORD, ())
        for key, value in node.items():
            if key != RULES_KEYWORD:
                yield from _rules(value)
    elif isinstance(node, list):
        for item in node:
            yield from _rules(item)


@pytest.mark.parametrize("file", sorted(SCHEMAS.schemas))
def test_every_rule_appears_in_words_on_its_schemas_page(file):
    page = PAGES[page_name(file)]
    for rule in _rules(SCHEMAS.schemas[file]):
        (line,) = {line for line in page.splitlines() if rule_text(rule) in line}
        operands = {v for v in rule.values() if isinstance(v, str)} - {"length", "items", "value"}
        for name in operands - {rule.get("because")}:
            assert f"`{name}`" in line, (file, rule, line)


def test_the_rules_read_as_the_definition_says():
    assert rule_text({"field": "min_mlp_nodes", "atMost": "max_mlp_nodes"}) == (
        "`min_mlp_nodes` must be at most `max_mlp_nodes`."
    )
    assert rule_text({"field": "v_min", "below": "v_max"}) == "`v_min` must be less than `v_max`."
    assert rule_text(
        {"field": "hidden_size", "measure": "items", "within": ["min_mlp_nodes", "max_mlp_nodes"]}
    ) == (
        "Every item of `hidden_size` must be between `min_mlp_nodes` and `max_mlp_nodes` "
        "(inclusive)."
    )
    assert (
        rule_text({"sameLength": ["a", "b", "c"]}) == "`a`, `b` and `c` must have the same length."
    )
    assert rule_text({"field": "ratios", "increasing": True}) == (
        "The numbers of `ratios` must strictly increase."
    )
    assert rule_text({"field": "vllm_config", "requiredIf": "use_vllm"}) == (
        "`vllm_config` is required (not null) when `use_vllm` is `true`."
    )
    assert rule_text({"field": "algorithm", "key": "num_envs", "sameAs": "environment"}) == (
        "Where `algorithm` holds `num_envs`, it must equal the `num_envs` of `environment`."
    )
    assert rule_text({"flag": "sync", "ignoredWhen": {"vectorize": ["native"]}}) == (
        '`sync` must not be `true` when `vectorize` is `"native"` (it would be ignored).'
    )


def test_every_kind_of_rule_the_keyword_allows_has_words():
    """codegen/rules.schema.json defines the keyword's rule kinds: one branch each,
    marked by the key it requires beyond ``field``."""
    shape = json.loads((ROOT / "codegen" / "rules.schema.json").read_text())
    kinds = set()
    for branch in shape["items"]["oneOf"]:
        kinds.update(set(branch.get("required", ())) - {"field", "key"})
    assert kinds - {"flag"} <= set(RULE_WORDS), kinds - set(RULE_WORDS)


def test_a_rule_of_no_known_kind_is_refused_by_name():
    with pytest.raises(ValueError, match=r'x-agilerl-rules: rule \{"field": "a", "near": "b"\}'):
        rule_text({"field": "a", "near": "b"})


def test_every_link_between_spec_pages_resolves():
    anchors = {name: set(re.findall(r"\{#([^}]+)\}", page)) for name, page in PAGES.items()}
    for name, page in PAGES.items():
        for target, anchor in re.findall(r"\]\(([a-z_]*\.md)?(?:#([^)]+))?\)", page):
            target = target or name
            if target.startswith("../"):
                continue
            assert target in PAGES, (name, target)
            assert not anchor or anchor in anchors[target], (name, target, anchor)


def test_the_manifest_page_says_which_section_each_algorithm_takes():
    page = PAGES["manifest.md"]
    assert "`name: DQN` → [DQNFields](dqn.md#def-dqnfields)" in page
    assert (
        'When `algorithm.name` is `"CQN"`: `environment` is [OfflineEnvSpec](offline_env.md).'
        in page
    )
    # What evolutionary HPO may mutate, per algorithm.
    assert (
        'When `algorithm.name` is `"DQN"`: `mutation.rl_hp_selection` may hold only '
        "`batch_size`, `learn_step`, `gamma`, `tau` and `lr`." in page
    )


def test_encoders_are_listed_by_their_arch_tag():
    page = PAGES["network.md"]
    assert (
        "selected by `arch`: `arch: mlp` → [MlpSpec](mlp.md); `arch: cnn` → [CnnSpec](cnn.md)"
        in page
    )


def test_an_algorithm_page_shows_its_registry_entry():
    page = PAGES["ppo.md"]
    assert "| Network spec | [StochasticActorSpec](stochastic_actor.md) |" in page
    assert '| Training function | `"train_on_policy"` |' in page


def test_a_deprecated_field_is_marked():
    schemas = SchemaSet(
        {
            "old.schema.json": {
                "title": "OldSpec",
                "type": "object",
                "properties": {
                    "speed": {"type": "number", "description": "Use pace.", "deprecated": True},
                    "pace": {"type": "number", "minimum": 0, "default": 1},
                },
            }
        }
    )
    page = spec_pages(schemas)["old.md"]
    (speed,) = _rows(page, "speed")
    assert "**Deprecated.** Use pace." in speed
    assert '!!! warning "Deprecated"' in page
    assert "`speed`: deprecated" in page


def test_a_ref_to_nothing_is_an_error_naming_the_file():
    schemas = SchemaSet(
        {"a.schema.json": {"title": "A", "properties": {"x": {"$ref": "b.schema.json"}}}}
    )
    with pytest.raises(ValueError, match=r"a.schema.json: \$ref 'b.schema.json' names no schema"):
        spec_pages(schemas)
