"""Every validator of training manifests gives the same verdict on every manifest.

Three validators judge each manifest file: the pydantic model
(``agilerl.models.manifest.load_manifest``, which raises ``SpecError``), the Python
``jsonschema`` view of ``schemas/manifest.schema.json`` (``agilerl.files.schema``) and ajv
(``codegen/node/validate.mjs --spec TrainingManifest``), each reading the file in its own
language (the one YAML dialect, see tests/test_documents.py).

The manifests: AgileRL's published ones (``tests/agilerl_manifests/``, a verbatim copy of
the compatibility corpus: valid or not, the validators must agree), the repository's
``configs/``, and ``tests/manifest_corpus/``: ``valid/`` manifests must be valid and
``invalid/`` ones invalid, each breaking one rule. An invalid manifest's second comment
line, ``# at: <JSON Pointer>``, names the field at fault; every validator must report an
error there (or inside it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, TESTS

from agilerl.files.documents import load_document
from agilerl.files.schema import validator_for
from agilerl.models.manifest import load_manifest
from agilerl.models.validation import SpecError

SCHEMA_DIR = ROOT / "schemas"
CORPUS = TESTS / "manifest_corpus"
SPEC = "TrainingManifest"

#: Manifests the validators are known to disagree on: path (from the repository root)
#: -> why. Each is an xfail(strict=True), so fixing the validator at fault makes it fail
#: until the entry is removed.
DISAGREEMENTS: dict[str, str] = {}

#: Invalid manifests on which pydantic also reports errors outside the field at fault.
STRAY_ERRORS: dict[str, str] = {}


@dataclass(frozen=True)
class Manifest:
    path: Path
    #: "valid" / "invalid" when the corpus says, None when only agreement is required.
    expected: str | None
    #: JSON Pointer of the field at fault (invalid corpus only).
    at: str | None = None

    @property
    def id(self) -> str:
        return str(self.path.relative_to(ROOT))


def _at(path: Path) -> str | None:
    found = re.search(r"^# at:[ \t]*(\S*)[ \t]*$", path.read_text(encoding="utf-8"), re.M)
    return found[1] if found else None


def manifests() -> list[Manifest]:
    found = [
        Manifest(path, None)
        for root in (TESTS / "agilerl_manifests", ROOT / "configs")
        if root.is_dir()
        for path in sorted(root.rglob("*.yaml"))
    ]
    found += [Manifest(path, "valid") for path in sorted((CORPUS / "valid").glob("*.yaml"))]
    found += [
        Manifest(path, "invalid", _at(path)) for path in sorted((CORPUS / "invalid").glob("*.yaml"))
    ]
    return found


MANIFESTS = manifests()
INVALID = [m for m in MANIFESTS if m.expected == "invalid"]


def params(selected: list[Manifest], known: dict[str, str] = DISAGREEMENTS) -> list[Any]:
    return [
        pytest.param(
            m,
            id=m.id,
            marks=[pytest.mark.xfail(strict=True, reason=known[m.id])] if m.id in known else [],
        )
        for m in selected
    ]


# --- What each validator says ---------------------------------------------------------


def pointer(parts: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def touches(blamed: str, field: str) -> bool:
    return blamed == field or blamed.startswith(field + "/")


def pydantic_errors(path: Path) -> list[tuple[str, str]] | None:
    """(pointer, message) of each issue ``load_manifest`` reports; None when valid."""
    try:
        load_manifest(path)
    except SpecError as error:
        return [(pointer(issue.path), issue.message) for issue in error.issues]
    return None


def schema_errors(path: Path) -> list[tuple[str, str]] | None:
    errors = list(validator_for(SPEC).iter_errors(load_document(path)[0]))
    return [(pointer(e.absolute_path), e.message) for e in errors] or None


def _schema_leaf_pointers(path: Path) -> list[str]:
    """Pointers of jsonschema's errors, anyOf/oneOf errors replaced by their branches'."""

    def leaves(errors: Any) -> Any:
        for error in errors:
            if error.context:
                yield from leaves(error.context)
            else:
                yield error

    document = load_document(path)[0]
    found = []
    for error in leaves(validator_for(SPEC).iter_errors(document)):
        where = list(error.absolute_path)
        if error.validator is None and list(error.relative_schema_path)[-1:] == ["properties"]:
            # jsonschema (4.26) yields a `false` property schema's error without the
            # property in its path (Validator.descend returns before adding it): blame
            # the keys of the object there that hold the value refused.
            parent = document
            for part in where:
                parent = parent[part]
            found += [pointer([*where, k]) for k, v in parent.items() if v == error.instance]
        elif error.validator == "required":
            found += [
                pointer([*where, n]) for n in error.validator_value if n not in error.instance
            ]
        elif error.validator in ("additionalProperties", "unevaluatedProperties"):
            found += [pointer([*where, k]) for k in error.instance if repr(k) in error.message]
        found.append(pointer(where))
    return found


def verdict(errors: list[Any] | None) -> str:
    return "invalid" if errors else "valid"


def describe(errors: list[Any] | None) -> str:
    return "\n".join(f"    {error}" for error in errors or []) or "    (no errors)"


@pytest.fixture(scope="module")
def ajv_report(node_toolchain: Any) -> dict[str, Any]:
    """validate.mjs's report on every manifest, keyed by path."""
    result = node_toolchain.run(
        "validate.mjs", "--schemas", SCHEMA_DIR, "--spec", SPEC, *(m.path for m in MANIFESTS)
    )
    assert result.returncode in (0, 1), (
        f"validate.mjs failed ({result.returncode}):\n{result.stderr}"
    )
    return json.loads(result.stdout)


# --- The corpus itself ----------------------------------------------------------------


def test_corpus_sizes() -> None:
    counts = {kind: sum(m.expected == kind for m in MANIFESTS) for kind in ("valid", "invalid")}
    assert counts["valid"] >= 10 and counts["invalid"] >= 25, counts
    assert sum(m.expected is None for m in MANIFESTS) >= 50, "tests/agilerl_manifests is missing"
    for manifest in INVALID:
        assert manifest.at is not None, f"{manifest.id}: needs a '# at: <JSON Pointer>' line"


# --- Python: pydantic and jsonschema --------------------------------------------------


@pytest.mark.parametrize("manifest", params(MANIFESTS))
def test_python_verdicts(manifest: Manifest) -> None:
    pydantic_found = pydantic_errors(manifest.path)
    schema_found = schema_errors(manifest.path)
    verdicts = {"pydantic": verdict(pydantic_found), "jsonschema": verdict(schema_found)}
    expected = manifest.expected or verdicts["pydantic"]
    assert verdicts == {"pydantic": expected, "jsonschema": expected}, (
        f"{manifest.id}: expected {expected}, got {verdicts}\n"
        f"  pydantic:\n{describe(pydantic_found)}\n  jsonschema:\n{describe(schema_found)}"
    )


@pytest.mark.parametrize("manifest", params(INVALID))
def test_python_locates_the_fault(manifest: Manifest) -> None:
    assert manifest.at is not None
    pydantic_found = pydantic_errors(manifest.path) or []
    assert any(touches(blamed, manifest.at) for blamed, _ in pydantic_found), (
        f"{manifest.id}: pydantic reports nothing at {manifest.at!r}\n{describe(pydantic_found)}"
    )
    schema_found = _schema_leaf_pointers(manifest.path)
    assert any(touches(blamed, manifest.at) for blamed in schema_found), (
        f"{manifest.id}: jsonschema reports nothing at {manifest.at!r}\n{describe(schema_found)}"
    )


@pytest.mark.parametrize("manifest", params(INVALID, STRAY_ERRORS))
def test_pydantic_reports_only_the_fault(manifest: Manifest) -> None:
    assert manifest.at is not None
    found = pydantic_errors(manifest.path) or []
    stray = [(blamed, message) for blamed, message in found if not touches(blamed, manifest.at)]
    assert not stray, f"{manifest.id}: errors outside {manifest.at!r}:\n{describe(stray)}"


# --- ajv (Node) -----------------------------------------------------------------------


@pytest.mark.node
@pytest.mark.parametrize("manifest", params(MANIFESTS))
def test_ajv_verdict(manifest: Manifest, ajv_report: dict[str, Any]) -> None:
    result = ajv_report[str(manifest.path)]
    ajv = "valid" if result["valid"] else "invalid"
    python = verdict(pydantic_errors(manifest.path))
    expected = manifest.expected or python
    assert {"ajv": ajv, "pydantic": python} == {"ajv": expected, "pydantic": expected}, (
        f"{manifest.id}: ajv says {ajv}, pydantic {python}, expected {expected}\n"
        f"  ajv:\n{describe(result['errors'])}"
    )


#: ajv params naming the key an object-level error is about.
_AJV_KEY_PARAMS = {
    "required": "missingProperty",
    "additionalProperties": "additionalProperty",
    "unevaluatedProperties": "unevaluatedProperty",
    "discriminator": "tag",
}


@pytest.mark.node
@pytest.mark.parametrize("manifest", params(INVALID))
def test_ajv_locates_the_fault(manifest: Manifest, ajv_report: dict[str, Any]) -> None:
    assert manifest.at is not None
    errors = ajv_report[str(manifest.path)]["errors"]
    blamed = [
        error["path"] + (pointer([error["params"][key]]) if key else "")
        for error in errors
        for key in [_AJV_KEY_PARAMS.get(error["keyword"])]
    ] + [error["path"] for error in errors]
    assert any(touches(b, manifest.at) for b in blamed), (
        f"{manifest.id}: ajv reports nothing at {manifest.at!r}\n{describe(errors)}"
    )


@pytest.mark.node
def test_ajv_manifest_cli(node_toolchain: Any) -> None:
    """The manifest mode as a user runs it: exit 0 when valid, 1 when not, JSON report."""
    valid = CORPUS / "valid" / "dqn_minimal.yaml"
    invalid = CORPUS / "invalid" / "algorithm_key_typo.yaml"
    ok = node_toolchain.run("validate.mjs", "--schemas", "schemas", "--spec", SPEC, valid)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout) == {str(valid): {"valid": True, "errors": []}}
    bad = node_toolchain.run("validate.mjs", "--schemas", "schemas", "--spec", SPEC, valid, invalid)
    assert bad.returncode == 1, bad.stderr
    report = json.loads(bad.stdout)
    assert report[str(valid)]["valid"] is True
    assert report[str(invalid)]["valid"] is False
    assert all({"path", "message"} <= error.keys() for error in report[str(invalid)]["errors"])
