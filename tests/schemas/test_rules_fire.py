"""Every ``x-agilerl-rules`` rule of ``schemas/`` fires where it sits, in every validator.

The rules are found by walking every schema at any depth (a root object, a ``$defs``
fragment, a ``oneOf`` or ``anyOf`` branch). Each object of a schema that holds rules has a
:class:`Site`: a valid document that reaches it (a manifest, for the sections of one; the
spec's own document for a spec no manifest holds) and the dotted path of the object the
rules check there. Each rule is broken alone in that object, and ``agilerl validate``
(the Python models, which ``agilerl train`` reads a manifest with), the ``jsonschema``
view (:mod:`agilerl.files.schema`) and ajv (``codegen/node/check.mjs``, which ``validate.mjs
--issues`` and the docs' playground share) must refuse the document at the rule's dotted
path with the rule's message, the one its definition (:mod:`agilerl.models.rules`) gives. A schema that gains rules in a
new place fails :func:`test_every_place_with_rules_has_a_site` until it has a site.
"""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jsonschema import ValidationError
from support import ROOT

from agilerl.files.documents import load_document
from agilerl.files.schema import validator_for
from agilerl.models.rules import RULES_KEYWORD, check_rules
from agilerl.models.standard_rules import is_rule_statement, node_rules

SCHEMAS = ROOT / "schemas"


# --- Where the rules are ----------------------------------------------------------------


def _rule_holders(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(JSON Pointer, object)`` of each object of a schema that holds rules (in our
    keyword, or in standard keywords: ``allOf`` entries :mod:`agilerl.models.standard_rules`
    reads)."""
    if isinstance(node, dict):
        if RULES_KEYWORD in node or any(map(is_rule_statement, node.get("allOf", ()))):
            yield pointer, node
        for key, value in node.items():
            if key != RULES_KEYWORD:
                yield from _rule_holders(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _rule_holders(value, f"{pointer}/{index}")


def _schema(file: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / file).read_text(encoding="utf-8"))


HOLDERS = {
    (path.name, pointer): node
    for path in sorted(SCHEMAS.glob("*.schema.json"))
    for pointer, node in _rule_holders(_schema(path.name))
}


def holder_rules(holder: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], bool]]:
    """The rules of an object: ``(rule, whether it is written in standard keywords)``."""
    return [(rule, False) for rule in holder.get(RULES_KEYWORD, ())] + [
        (rule, True) for rule in node_rules(holder)
    ]


@dataclass(frozen=True)
class Site:
    """A valid document reaching one object with rules, and where that object is in it."""

    #: A file of the repository the document is read from ...
    base: str
    #: ... the dotted path of the document in it ("": the whole file) ...
    document: str = ""
    #: ... and values set in it (dotted path -> value) before anything is broken.
    edits: Mapping[str, Any] = field(default_factory=dict)
    #: The dotted path of the object the rules check ("": the document).
    section: str = ""
    #: The spec the document is validated as.
    spec: str = "TrainingManifest"
    #: Values for fields a rule needs given, where the schema gives no example.
    samples: Mapping[str, Any] = field(default_factory=dict)


_ENTRY_POINT = {
    "entrypoint": "agilerl.testing.multiturn:RevealedTopic",
    "env_config": {"reveal": True},
}

#: (schema file, JSON Pointer of the object with rules) -> the site its rules are broken at.
SITES = {
    ("cnn.schema.json", ""): Site(
        "configs/dqn.yaml",
        edits={
            "network.arch": "cnn",
            "network.encoder_config": {
                "channel_size": [32, 64],
                "kernel_size": [8, 4],
                "stride_size": [4, 2],
            },
        },
        section="network.encoder_config",
    ),
    ("gym_env.schema.json", "/$defs/GymEnvFields"): Site("configs/dqn.yaml", section="environment"),
    ("llm_algorithm.schema.json", "/$defs/CompletionSamplingFields"): Site(
        "configs/grpo.yaml", section="algorithm"
    ),
    ("llm_env.schema.json", ""): Site(
        "configs/grpo.yaml",
        document="environment",
        edits={"env_type": "reasoning"},
        spec="LLMEnvSpec",
        samples=_ENTRY_POINT,
    ),
    ("llm_preference_env.schema.json", ""): Site(
        "configs/dpo.yaml", section="environment", samples=_ENTRY_POINT
    ),
    ("llm_reasoning_env.schema.json", ""): Site(
        "configs/grpo.yaml", section="environment", samples=_ENTRY_POINT
    ),
    ("llm_sft_env.schema.json", ""): Site(
        "configs/sft.yaml", section="environment", samples=_ENTRY_POINT
    ),
    ("lstm.schema.json", ""): Site("configs/ppo_recurrent.yaml", section="network.encoder_config"),
    ("manifest.schema.json", ""): Site("configs/ppo.yaml"),
    ("mlp.schema.json", ""): Site("configs/dqn.yaml", section="network.encoder_config"),
    ("multi_frequency_selection.schema.json", ""): Site(
        "configs/dqn.yaml",
        edits={
            "selection_strategy": {
                "strategy": "multi_frequency",
                "n_subpopulations": 2,
                "evolution_frequency_ratios": [1, 5],
            },
            "training.pop_size": 6,
        },
        section="selection_strategy",
    ),
    ("multi_input.schema.json", ""): Site(
        "configs/dqn.yaml",
        edits={"network.arch": "multiinput", "network.encoder_config": {"latent_dim": 32}},
        section="network.encoder_config",
    ),
    ("mutation.schema.json", "/$defs/MutationProbabilities"): Site(
        "configs/dqn.yaml", section="mutation.probabilities"
    ),
    ("mutation.schema.json", "/$defs/RLHyperparameter"): Site(
        "configs/dqn.yaml", section="mutation.rl_hp_selection.lr"
    ),
    ("network.schema.json", "/$defs/NetworkCommonFields"): Site(
        "configs/dqn.yaml", section="network"
    ),
    ("offline_env.schema.json", ""): Site("configs/cqn.yaml", section="environment"),
    ("rainbow_dqn.schema.json", "/$defs/RainbowDQNFields"): Site(
        "configs/rainbow_dqn.yaml", section="algorithm"
    ),
    ("simba.schema.json", ""): Site(
        "configs/dqn.yaml",
        edits={
            "network.arch": "simba",
            "network.encoder_config": {"hidden_size": 64, "num_blocks": 2},
        },
        section="network.encoder_config",
    ),
    ("training.schema.json", ""): Site(
        "configs/dqn.yaml", edits={"training.eps_start": 0.5}, section="training"
    ),
}


# --- Documents ---------------------------------------------------------------------------


def _parts(dotted: str) -> list[str]:
    return dotted.split(".") if dotted else []


def _get(document: Any, dotted: str) -> Any:
    for key in _parts(dotted):
        document = document.get(key) if isinstance(document, dict) else None
    return document


def _set(document: dict[str, Any], dotted: str, value: Any) -> None:
    *above, last = _parts(dotted)
    for key in above:
        document = document.setdefault(key, {})
    document[last] = value


def site_document(site: Site) -> dict[str, Any]:
    """The valid document of ``site``."""
    document = copy.deepcopy(_get(load_document(ROOT / site.base)[0], site.document))
    for dotted, value in site.edits.items():
        _set(document, dotted, copy.deepcopy(value))
    return document


def _resolve(file: str, ref: str) -> tuple[str, dict[str, Any]]:
    """The file and object a ``$ref`` of ``file`` names."""
    target, _, pointer = ref.partition("#")
    file = target or file
    node = _schema(file)
    for key in filter(None, pointer.split("/")):
        node = node[key]
    return file, node


def properties(file: str, node: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The property schemas of an object schema, those of the fragments it is built from
    (``allOf`` of ``$ref``) included."""
    found: dict[str, dict[str, Any]] = {}
    for part in node.get("allOf", []):
        if "$ref" in part:
            found.update(properties(*_resolve(file, part["$ref"])))
    for name, prop in node.get("properties", {}).items():
        found[name] = {**found.get(name, {}), **prop}
    return found


@dataclass
class Fields:
    """The object a rule checks, with what the schema says of its properties."""

    values: dict[str, Any]
    schemas: dict[str, dict[str, Any]]
    samples: Mapping[str, Any]

    def value(self, path: str) -> Any:
        """The value at ``path`` as the rules read it: the property, its default applying."""
        head, *keys = _parts(path)
        found = self.values.get(head, self.schemas.get(head, {}).get("default"))
        return _get(found, ".".join(keys))

    def sample(self, name: str) -> Any:
        """A value the property accepts: its own, the schema's example or the site's."""
        given = self.value(name)
        if given is not None:
            return given
        examples = self.schemas.get(name, {}).get("examples")
        if examples:
            return copy.deepcopy(examples[0])
        assert name in self.samples, f"give the site a sample value of {name}"
        return self.samples[name]

    def above(self, name: str, bound: float) -> float:
        """A value of property ``name`` above ``bound``: the next integer, or a step
        toward the property's maximum."""
        prop = self.schemas.get(name, {})
        numeric = next(
            (p for p in [prop, *prop.get("anyOf", [])] if p.get("type") in ("integer", "number")),
            {"type": "integer" if isinstance(bound, int) else "number"},
        )
        if numeric["type"] == "integer":
            return bound + 1
        return bound + min(1.0, (numeric.get("maximum", math.inf) - bound) / 2)

    def hold(self, conditions: Mapping[str, list[Any]]) -> None:
        """Make every path of ``conditions`` hold one of its values (its own where it does)."""
        for path, allowed in conditions.items():
            if self.value(path) not in allowed:
                _set(self.values, path, allowed[0])


# --- Breaking one rule: a function per kind of rule ---------------------------------------


def _increasing_from(first: int, length: int) -> list[int]:
    return [first + i for i in range(length)]


def _break_bounds(rule: Mapping[str, Any], fields: Fields) -> None:
    """atMost, below, within: a value (a length, an item) past the bound."""
    name, measure = rule["field"], rule.get("measure", "value")
    if "within" in rule:
        target = fields.value(rule["within"][1]) + 1
    elif "atMost" in rule:
        target = fields.above(name, fields.value(rule["atMost"]))
    else:
        target = fields.value(rule["below"])
    current = fields.value(name)
    if measure == "length":
        first = current[0] if current else 1
        fields.values[name] = _increasing_from(first, target)
    elif measure == "items":
        fields.values[name] = [target, *current[1:]]
    else:
        fields.values[name] = target


def _break_increasing(rule: Mapping[str, Any], fields: Fields) -> None:
    current = fields.value(rule["field"]) or [1, 2]
    fields.values[rule["field"]] = sorted(current, reverse=True)


def _break_same_length(rule: Mapping[str, Any], fields: Fields) -> None:
    other = rule["sameLength"][1]
    current = fields.value(other)
    fields.values[other] = [*current, current[-1]]


def _break_required_if(rule: Mapping[str, Any], fields: Fields) -> None:
    fields.values[rule["requiredIf"]] = True
    fields.values[rule["field"]] = None


def _break_any_positive(rule: Mapping[str, Any], fields: Fields) -> None:
    for name in rule["anyPositive"]:
        fields.values[name] = 0


def _break_exactly_one(rule: Mapping[str, Any], fields: Fields) -> None:
    for name in rule["exactlyOne"]:
        fields.values[name] = None


def _break_same_as(rule: Mapping[str, Any], fields: Fields) -> None:
    key = rule["key"]
    _set(fields.values, f"{rule['field']}.{key}", fields.value(rule["sameAs"])[key] + 1)


def _break_required_when(rule: Mapping[str, Any], fields: Fields) -> None:
    fields.hold(rule["requiredWhen"])
    fields.values[rule["field"]] = None


def _break_forbidden_when(rule: Mapping[str, Any], fields: Fields) -> None:
    fields.hold(rule["forbiddenWhen"])
    fields.values[rule["field"]] = fields.sample(rule["field"])


def _break_exclusive(rule: Mapping[str, Any], fields: Fields) -> None:
    for name in rule["exclusive"][:2]:
        fields.values[name] = fields.sample(name)


def _break_ignored_flag(rule: Mapping[str, Any], fields: Fields) -> None:
    _set(fields.values, rule["flag"], True)
    fields.hold(dict([next(iter(rule["ignoredWhen"].items()))]))


#: The keyword telling each kind of rule apart -> how to break one of that kind.
BREAKERS: dict[str, Callable[[Mapping[str, Any], Fields], None]] = {
    "within": _break_bounds,
    "atMost": _break_bounds,
    "below": _break_bounds,
    "increasing": _break_increasing,
    "sameLength": _break_same_length,
    "requiredIf": _break_required_if,
    "anyPositive": _break_any_positive,
    "exactlyOne": _break_exactly_one,
    "sameAs": _break_same_as,
    "requiredWhen": _break_required_when,
    "forbiddenWhen": _break_forbidden_when,
    "exclusive": _break_exclusive,
    "ignoredWhen": _break_ignored_flag,
}


@dataclass(frozen=True)
class Case:
    """One rule broken at its site: the document, and the issue it must be refused with."""

    id: str
    spec: str
    document: dict[str, Any]
    path: str
    message: str
    #: Written in standard keywords: the other validators report their own message there.
    standard: bool = False


def _kind(rule: Mapping[str, Any]) -> str:
    return next(kind for kind in BREAKERS if kind in rule)


def broken_case(file: str, pointer: str, index: int) -> Case:
    """Rule ``index`` of the object at ``pointer`` of ``file``, broken at its site."""
    holder = HOLDERS[(file, pointer)]
    rule, standard = holder_rules(holder)[index]
    site = SITES[(file, pointer)]
    document = site_document(site)
    schemas = properties(file, holder)
    defaults = {name: prop.get("default") for name, prop in schemas.items()}
    section = _get(document, site.section)
    assert not list(check_rules([rule], section, defaults)), "the site breaks the rule already"
    BREAKERS[_kind(rule)](rule, Fields(section, schemas, site.samples))
    violations = list(check_rules([rule], section, defaults))
    assert len(violations) == 1, violations
    (violation,) = violations
    return Case(
        id=f"{file.removesuffix('.schema.json')}{pointer}-{index}-{_kind(rule)}",
        spec=site.spec,
        document=document,
        path=".".join([*_parts(site.section), *map(str, violation.path)]),
        message=violation.message,
        standard=standard,
    )


CASES = [
    broken_case(file, pointer, index)
    for (file, pointer), holder in HOLDERS.items()
    if (file, pointer) in SITES
    for index in range(len(holder_rules(holder)))
]


# --- The validators' reports --------------------------------------------------------------


def _write(directory: Path, cases: list[Case]) -> dict[str, list[Path]]:
    """Each case's document as a JSON file of ``directory``, by spec."""
    files: dict[str, list[Path]] = {}
    for case in cases:
        path = directory / f"{case.id.replace('/', '_')}.json"
        path.write_text(json.dumps(case.document), encoding="utf-8")
        files.setdefault(case.spec, []).append(path)
    return files


def _python_report(files: dict[str, list[Path]]) -> dict[str, Any]:
    report = {}
    for spec, paths in files.items():
        command = [sys.executable, "-m", "agilerl", "validate", "--format", "json"]
        result = subprocess.run(
            [*command, "--spec", spec, *map(str, paths)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode in (0, 1), f"agilerl validate failed:\n{result.stderr}"
        report.update(json.loads(result.stdout))
    return report


def _node_report(node_toolchain: Any, files: dict[str, list[Path]]) -> dict[str, Any]:
    report = {}
    for spec, paths in files.items():
        result = node_toolchain.run(
            "validate.mjs", "--schemas", SCHEMAS, "--spec", spec, "--issues", *paths
        )
        assert result.returncode in (0, 1), f"validate.mjs --issues failed:\n{result.stderr}"
        report.update(json.loads(result.stdout))
    return report


@pytest.fixture(scope="module")
def broken_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    return _write(tmp_path_factory.mktemp("broken"), CASES)


@pytest.fixture(scope="module")
def site_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    sites = [
        Case(f"{file}{pointer}", site.spec, site_document(site), "", "")
        for (file, pointer), site in SITES.items()
    ]
    return _write(tmp_path_factory.mktemp("sites"), sites)


def _issues(report: dict[str, Any], case: Case, files: dict[str, list[Path]]) -> list[Any]:
    (path,) = [p for p in files[case.spec] if p.stem == case.id.replace("/", "_")]
    return [(error["path"], error["message"]) for error in report[str(path)].get("errors", [])]


def _jsonschema_issues(errors: Iterable[ValidationError]) -> Iterator[tuple[str, str]]:
    """The rule errors of the ``jsonschema`` view, those inside ``anyOf`` branches too."""
    for error in errors:
        if error.validator == RULES_KEYWORD:
            yield ".".join(map(str, error.absolute_path)), error.message
        yield from _jsonschema_issues(error.context or ())


def _jsonschema_places(errors: Iterable[ValidationError]) -> Iterator[str]:
    """Where the ``jsonschema`` view reports each error (a missing property at its
    name), those inside ``anyOf`` branches too."""
    for error in errors:
        where = list(map(str, error.absolute_path))
        if error.validator == "required":
            missing = [name for name in error.validator_value if name not in error.instance]
            yield from (".".join([*where, name]) for name in missing)
        yield ".".join(where)
        yield from _jsonschema_places(error.context or ())


def _all_valid(report: dict[str, Any]) -> dict[str, Any]:
    return {name: entry["errors"] for name, entry in report.items() if not entry["valid"]}


# --- Tests ----------------------------------------------------------------------------------


def test_every_place_with_rules_has_a_site() -> None:
    assert HOLDERS.keys() == SITES.keys(), (
        f"rules without a site: {sorted(HOLDERS.keys() - SITES.keys())}; "
        f"sites without rules: {sorted(SITES.keys() - HOLDERS.keys())}"
    )
    assert len(CASES) == sum(len(holder_rules(holder)) for holder in HOLDERS.values())


def test_sites_are_valid_in_python(site_files: dict[str, list[Path]]) -> None:
    assert _all_valid(_python_report(site_files)) == {}


@pytest.mark.node
def test_sites_are_valid_in_node(site_files: dict[str, list[Path]], node_toolchain: Any) -> None:
    assert _all_valid(_node_report(node_toolchain, site_files)) == {}


@pytest.fixture(scope="module")
def python_report(broken_files: dict[str, list[Path]]) -> dict[str, Any]:
    return _python_report(broken_files)


@pytest.fixture(scope="module")
def node_report(broken_files: dict[str, list[Path]], node_toolchain: Any) -> dict[str, Any]:
    return _node_report(node_toolchain, broken_files)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_rule_fires_in_python(
    case: Case, python_report: dict[str, Any], broken_files: dict[str, list[Path]]
) -> None:
    assert (case.path, case.message) in _issues(python_report, case, broken_files)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_rule_fires_in_jsonschema(case: Case) -> None:
    errors = list(validator_for(case.spec).iter_errors(case.document))
    if case.standard:  # the standard keywords' own error, at the rule's path
        assert case.path in set(_jsonschema_places(errors)), errors
    else:
        assert (case.path, case.message) in set(_jsonschema_issues(errors))


@pytest.mark.node
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_rule_fires_in_node(
    case: Case, node_report: dict[str, Any], broken_files: dict[str, list[Path]]
) -> None:
    issues = _issues(node_report, case, broken_files)
    if case.standard:  # ajv's own message for the standard keywords, at the rule's path
        assert case.path in {path for path, _ in issues}, issues
    else:
        assert (case.path, case.message) in issues
