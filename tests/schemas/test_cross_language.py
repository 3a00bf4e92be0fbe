"""Every validator of the specs agrees on tests/corpus, and on where a document is wrong.

Three validators judge each corpus document: the pydantic models (``agilerl.models``),
the Python ``jsonschema`` view of ``schemas/`` (``agilerl.files.schema``) and ajv
(``codegen/node/validate.mjs``, the view of every JavaScript tool). Their verdicts must
equal the corpus's: ``valid.json`` documents are valid, ``invalid.json`` ones are not.

Each invalid document breaks one rule, named by its ``keyword`` (the JSON Schema keyword
that rejects it) and located by ``at``: JSON Pointers of the fields at fault, the first
being the one the rule is about. A few rules cannot break alone (``min > max`` also
breaks the ``within`` rule using that pair), so the others are listed after it. Every
validator must point at those fields and nowhere else.

A rule of the models that JSON Schema can state is written in standard keywords
(agilerl/models/standard_rules.py); its case names the standard keyword that rejects the
document and carries ``"rule": true``: pydantic still reports it as the rule it checks.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest
from jsonschema import ValidationError
from support import ROOT, TESTS

from agilerl.cli.validate import spec_classes
from agilerl.files.schema import schema_titles, validator_for
from agilerl.models.rules import RULES_KEYWORD

CORPUS_DIR = TESTS / "corpus"
SCHEMA_DIR = ROOT / "schemas"


@dataclass(frozen=True)
class Case:
    id: str
    spec: str
    why: str
    document: Any
    valid: bool
    keyword: str | None = None
    at: tuple[str, ...] = ()
    #: A rule of the models stated in standard keywords (``keyword`` is the one failing).
    rule: bool = False

    def __str__(self) -> str:
        return f"{self.id} ({self.spec}: {self.why})"


def _load(file_name: str, valid: bool) -> list[Case]:
    entries = json.loads((CORPUS_DIR / file_name).read_text(encoding="utf-8"))
    return [
        Case(
            id=entry["id"],
            spec=entry["spec"],
            why=entry["why"],
            document=entry["document"],
            valid=valid,
            keyword=entry.get("keyword"),
            at=tuple(entry.get("at", ())),
            rule=entry.get("rule", False),
        )
        for entry in entries
    ]


CASES = _load("valid.json", valid=True) + _load("invalid.json", valid=False)
INVALID = [case for case in CASES if not case.valid]


def cases(selected: Sequence[Case]) -> Any:
    return pytest.mark.parametrize("case", selected, ids=[case.id for case in selected])


# --- Reading the errors of each validator as JSON Pointers of the fields at fault ----


def pointer(parts: Iterable[str | int]) -> str:
    """RFC 6901 JSON Pointer of a path."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def touches(blamed: str, fields: Iterable[str]) -> bool:
    """Whether ``blamed`` is one of ``fields`` or lies inside one (an array item of it)."""
    return any(blamed == field or blamed.startswith(field + "/") for field in fields)


def schema_errors(spec: str, document: Any) -> list[ValidationError]:
    """The Python jsonschema errors about ``document``, with oneOf/anyOf errors replaced
    by those of the branches the document was meant for (see ``_meant_branches``)."""
    return list(_leaves(validator_for(spec).iter_errors(document)))


def _leaves(errors: Iterable[ValidationError]) -> Iterator[ValidationError]:
    for error in errors:
        if error.context:
            yield from _leaves(_meant_branches(error))
        else:
            yield error


def _meant_branches(error: ValidationError) -> list[ValidationError]:
    """The sub-errors of a failed oneOf/anyOf from the branches meant for the document.

    jsonschema reports every branch; a branch whose discriminator tag or type does not
    match the document was never meant for it (ajv, told about the discriminator, does
    not even try it). When no branch is meant, the tag or type mismatches are the error.
    """
    tag = error.schema.get("discriminator", {}).get("propertyName")
    branches: dict[Any, list[ValidationError]] = defaultdict(list)
    for sub in error.context:
        branches[sub.relative_schema_path[0]].append(sub)

    def rules_out(sub: ValidationError) -> bool:
        mismatched_tag = sub.validator == "const" and list(sub.relative_path) == [tag]
        mismatched_type = sub.validator == "type" and not sub.relative_path
        return mismatched_tag or mismatched_type

    meant = [subs for subs in branches.values() if not any(map(rules_out, subs))]
    if meant:
        return [sub for subs in meant for sub in subs]
    return [sub for sub in error.context if rules_out(sub)]


def schema_blame(error: ValidationError) -> list[str]:
    """Pointers of the fields a jsonschema error is about."""
    path = list(error.absolute_path)
    if error.validator == "required":
        return [
            pointer([*path, name]) for name in error.validator_value if name not in error.instance
        ]
    if error.validator in ("additionalProperties", "unevaluatedProperties"):
        # jsonschema names the unexpected keys in its message only.
        return [pointer([*path, key]) for key in error.instance if repr(key) in error.message]
    return [pointer(path)]


def pydantic_errors(spec: str, document: Any) -> list[dict[str, Any]]:
    try:
        spec_classes()[spec].model_validate(document)
    except pydantic.ValidationError as error:
        return error.errors()
    return []


def pydantic_blame(error: dict[str, Any], document: Any) -> str:
    """Pointer of the field a pydantic error is about.

    pydantic's ``loc`` names union members too (``("encoder_config", "mlp",
    "hidden_size")``, ``("target_modules", "list[str]", 0)``); walking the document
    tells those labels from real keys. The one key a ``loc`` may name that the document
    lacks is its last one, in an object: a missing field, or a defaulted one a rule is about.
    """
    loc = error["loc"]
    node, parts = document, []
    for depth, segment in enumerate(loc):
        if isinstance(node, dict) and segment in node:
            node = node[segment]
        elif isinstance(node, list) and isinstance(segment, int) and 0 <= segment < len(node):
            node = node[segment]
        elif not (isinstance(node, dict) and depth == len(loc) - 1):
            continue  # a union-member label, not part of the document
        parts.append(segment)
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        parts.append(_discriminator(error))
    return pointer(parts)


def _discriminator(error: dict[str, Any]) -> str:
    """The tag name of a discriminated-union error: from ``ctx`` when pydantic keeps it,
    else from the message ("... discriminator 'arch'", "... found using 'arch' ...")."""
    if "ctx" in error:
        return error["ctx"]["discriminator"].strip("'")
    found = re.search(r"using (?:discriminator )?'([^']+)'", error["msg"])
    assert found, f"no discriminator in {error}"
    return found[1]


#: ajv params naming the key an object-level error is about.
_AJV_KEY_PARAMS = {
    "required": "missingProperty",
    "additionalProperties": "additionalProperty",
    "unevaluatedProperties": "unevaluatedProperty",
    "discriminator": "tag",
}


def ajv_blame(error: dict[str, Any]) -> str:
    key = _AJV_KEY_PARAMS.get(error["keyword"])
    if key is None:
        return error["path"]
    return error["path"] + pointer([error["params"][key]])


def describe(errors: Iterable[Any]) -> str:
    return "\n".join(f"    {error}" for error in errors) or "    (no errors)"


# --- The corpus itself ----------------------------------------------------------------


def test_corpus_covers_every_spec() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids)), (
        f"duplicate ids: {sorted({i for i in ids if ids.count(i) > 1})}"
    )
    specs = set(schema_titles()) & set(spec_classes())
    assert {case.spec for case in CASES} <= specs
    for valid in (True, False):
        covered = {case.spec for case in CASES if case.valid is valid}
        assert specs <= covered, (
            f"no {'valid' if valid else 'invalid'} document for {sorted(specs - covered)}"
        )
    for case in INVALID:
        assert case.keyword and case.at, f"{case}: invalid entries need 'keyword' and 'at'"
        assert all(field.startswith("/") for field in case.at), f"{case}: 'at' holds JSON Pointers"


# --- Python: pydantic and jsonschema --------------------------------------------------


@cases(CASES)
def test_python_verdicts(case: Case) -> None:
    schema_found = schema_errors(case.spec, case.document)
    pydantic_found = pydantic_errors(case.spec, case.document)
    expected = "valid" if case.valid else "invalid"
    verdicts = {
        "jsonschema": "invalid" if schema_found else "valid",
        "pydantic": "invalid" if pydantic_found else "valid",
    }
    assert verdicts == {"jsonschema": expected, "pydantic": expected}, (
        f"{case}: expected {expected}, got {verdicts}\n"
        f"  jsonschema:\n{describe(e.message for e in schema_found)}\n"
        f"  pydantic:\n{describe(pydantic_found)}"
    )


@cases(INVALID)
def test_jsonschema_locates_the_fault(case: Case) -> None:
    found = [
        (error.validator, blamed)
        for error in schema_errors(case.spec, case.document)
        # A failed allOf drops its annotations (draft 2020-12), so jsonschema also calls
        # every property it had evaluated unevaluated: consequences, not the fault.
        if error.validator != "unevaluatedProperties" or case.keyword == "unevaluatedProperties"
        for blamed in schema_blame(error)
    ]
    at_primary = {keyword for keyword, blamed in found if touches(blamed, case.at[:1])}
    assert case.keyword in at_primary, (
        f"{case}: no {case.keyword!r} error at {case.at[0]}; got\n{describe(found)}"
    )
    stray = [(kw, blamed) for kw, blamed in found if not touches(blamed, case.at)]
    assert not stray, f"{case}: errors outside {list(case.at)}:\n{describe(stray)}"


@cases(INVALID)
def test_pydantic_locates_the_fault(case: Case) -> None:
    found = [
        (error["type"], pydantic_blame(error, case.document))
        for error in pydantic_errors(case.spec, case.document)
    ]
    assert any(touches(blamed, case.at[:1]) for _, blamed in found), (
        f"{case}: no error at {case.at[0]}; got\n{describe(found)}"
    )
    if case.keyword == RULES_KEYWORD or case.rule:
        assert ("cross_field", case.at[0]) in found, (
            f"{case}: no rule error at {case.at[0]}; got\n{describe(found)}"
        )
    stray = [(kind, blamed) for kind, blamed in found if not touches(blamed, case.at)]
    assert not stray, f"{case}: errors outside {list(case.at)}:\n{describe(stray)}"


# --- ajv (Node) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ajv_report(node_toolchain: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """validate.mjs's report on the whole corpus, keyed by id."""
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.json"
    corpus.write_text(
        json.dumps([{"id": c.id, "spec": c.spec, "document": c.document} for c in CASES]),
        encoding="utf-8",
    )
    result = node_toolchain.run("validate.mjs", "--schemas", SCHEMA_DIR, "--corpus", corpus)
    assert result.returncode == 0, f"validate.mjs failed ({result.returncode}):\n{result.stderr}"
    return json.loads(result.stdout)


@pytest.mark.node
@cases(CASES)
def test_ajv_verdict(case: Case, ajv_report: dict[str, Any]) -> None:
    result = ajv_report[case.id]
    assert result["valid"] is case.valid, (
        f"{case}: ajv says {'valid' if result['valid'] else 'invalid'}, Python says "
        f"{'valid' if case.valid else 'invalid'}\n{describe(result['errors'])}"
    )


@pytest.mark.node
@cases(CASES)
def test_ajv_rule_errors_match_python(case: Case, ajv_report: dict[str, Any]) -> None:
    # Same paths and same messages: the corpus breaks no rule with a float, the one
    # place the texts could differ (Python prints 8.0 where JavaScript prints 8).
    ajv_rules = {
        (error["path"], error["message"])
        for error in ajv_report[case.id]["errors"]
        if error["keyword"] == RULES_KEYWORD
    }
    python_rules = {
        (pointer(error.absolute_path), error.message)
        for error in schema_errors(case.spec, case.document)
        if error.validator == RULES_KEYWORD
    }
    assert ajv_rules == python_rules, (
        f"{case}: rule errors differ\n  ajv: {ajv_rules}\n  python: {python_rules}"
    )


@pytest.mark.node
@cases(INVALID)
def test_ajv_locates_the_fault(case: Case, ajv_report: dict[str, Any]) -> None:
    errors = ajv_report[case.id]["errors"]
    at_primary = {error["keyword"] for error in errors if touches(ajv_blame(error), case.at[:1])}
    # ajv, told about the discriminator, reports an unknown tag as such, not as a const.
    expected = {"const", "discriminator"} if case.keyword == "const" else {case.keyword}
    assert at_primary & expected, (
        f"{case}: no {case.keyword!r} error at {case.at[0]}; got\n{describe(errors)}"
    )


@pytest.mark.node
def test_ajv_strict_compile(node_toolchain: Any) -> None:
    result = node_toolchain.run("validate.mjs", "--schemas", SCHEMA_DIR, "--compile-only")
    assert result.returncode == 0, f"strict-mode schema lint failed:\n{result.stderr}"


def _schemas_with_mlp(tmp_path: Path, **extra: Any) -> Path:
    """A copy of schemas/ whose mlp.schema.json has ``extra`` merged in at its top."""
    for source in SCHEMA_DIR.glob("*.schema.json"):
        (tmp_path / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    mlp = tmp_path / "mlp.schema.json"
    mlp.write_text(
        json.dumps({**json.loads(mlp.read_text(encoding="utf-8")), **extra}), encoding="utf-8"
    )
    return tmp_path


@pytest.mark.node
def test_ajv_accepts_the_annotation_keywords(node_toolchain: Any, tmp_path: Path) -> None:
    schemas = _schemas_with_mlp(
        tmp_path,
        markdownDescription="An **MLP**.",
        deprecationMessage="Use something else.",
        enumDescriptions=["a"],
        markdownEnumDescriptions=["*a*"],
        defaultSnippets=[{"label": "MLP", "body": {"hidden_size": [64]}}],
        doNotSuggest=False,
        **{"x-agilerl-algorithm": {"agent_type": "single_agent"}},
    )
    result = node_toolchain.run("validate.mjs", "--schemas", schemas, "--compile-only")
    assert result.returncode == 0, result.stderr


@pytest.mark.node
@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"minimun": 1}, id="unknown-keyword"),
        pytest.param({"doNotSuggest": "yes"}, id="annotation-of-wrong-type"),
        pytest.param(
            {RULES_KEYWORD: [{"field": "hidden_size", "atMots": "max_hidden_layers"}]},
            id="misspelt-rule",
        ),
        pytest.param({RULES_KEYWORD: [{"sameLength": ["hidden_size"]}]}, id="short-sameLength"),
        pytest.param(
            {RULES_KEYWORD: [{"field": "hidden_size", "measure": "size", "below": "x"}]},
            id="bad-measure",
        ),
    ],
)
def test_ajv_strict_compile_rejects(
    node_toolchain: Any, tmp_path: Path, extra: dict[str, Any]
) -> None:
    result = node_toolchain.run(
        "validate.mjs", "--schemas", _schemas_with_mlp(tmp_path, **extra), "--compile-only"
    )
    assert result.returncode == 1, f"accepted {extra}: {result.stdout}{result.stderr}"
    assert "mlp.schema.json" in result.stderr, result.stderr
