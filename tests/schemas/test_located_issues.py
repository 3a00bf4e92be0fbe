"""ajv's errors, located and worded as ``agilerl validate`` words them.

``codegen/node/check.mjs`` (shared by ``validate.mjs --issues`` and the docs' manifest
playground) turns ajv's errors into issues: dotted path, line and column, pydantic's
message. On every manifest of ``configs/`` and ``tests/manifest_corpus/`` they must equal
``agilerl validate --format json``'s, but for the manifests in WORDED_DIFFERENTLY; so must
the located old spellings of keys (``deprecated``) of both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, TESTS
from support.validate_json import validate_json

CORPUS = TESTS / "manifest_corpus"
MANIFESTS = sorted(
    [
        *(ROOT / "configs").glob("*.yaml"),
        *(CORPUS / "valid").glob("*.yaml"),
        *(CORPUS / "invalid").glob("*.yaml"),
    ]
)

_PYTHON_CONTEXT = "Python words it in terms of the whole manifest"
#: Manifests on which the two report different issues (corpus file -> why). Each is an
#: xfail(strict=True): teaching check.mjs the Python wording makes it fail until removed.
WORDED_DIFFERENTLY = {
    "deferred_encoder_fits_none.yaml": "an encoder without an arch that fits none: Python"
    " names the closest encoder, ajv reports the one with the fewest problems",
    "network_arch_conflict.yaml": "an encoder whose arch is not the network's: Python says"
    " so, ajv reports the encoder the network's arch names",
    "environment_not_object.yaml": f"{_PYTHON_CONTEXT} ('Input should be an object')",
    "not_a_mapping.yaml": _PYTHON_CONTEXT,
    "lowercase_algorithm.yaml": f"{_PYTHON_CONTEXT} ('algorithm ... is not registered; registered algorithms: ...')",
    "unknown_algorithm.yaml": f"{_PYTHON_CONTEXT} ('algorithm ... is not registered; registered algorithms: ...')",
    "rl_hp_boolean_hyperparameter.yaml": f"{_PYTHON_CONTEXT} (the algorithm's mutable fields)",
    "rl_hp_unknown_hyperparameter.yaml": f"{_PYTHON_CONTEXT} (the algorithm's mutable fields)",
    "rl_hp_range_batch_size_zero.yaml": f"{_PYTHON_CONTEXT} ('PPO.batch_size must be >= 1')",
    "rl_hp_range_fractional_integer.yaml": f"{_PYTHON_CONTEXT} ('DQN.learn_step must be ...')",
    "rl_hp_range_outside_gamma_limits.yaml": f"{_PYTHON_CONTEXT} ('DQN.gamma must be ...')",
    "squash_output_on_dqn.yaml": f"{_PYTHON_CONTEXT} (which network the algorithm builds)",
}


def params() -> list[Any]:
    found = []
    for path in MANIFESTS:
        why = WORDED_DIFFERENTLY.get(path.name) if path.parent == CORPUS / "invalid" else None
        marks = [pytest.mark.xfail(reason=why, strict=True)] if why else []
        found.append(pytest.param(path, marks=marks, id=str(path.relative_to(ROOT))))
    return found


def located(entry: dict[str, Any]) -> tuple[bool, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The verdict, the errors and the old spellings of keys (``deprecated``), located."""

    def each(kind: str) -> list[tuple[Any, ...]]:
        return sorted(
            (e["line"], e["column"], e["path"], e["message"]) for e in entry.get(kind, [])
        )

    return entry["valid"], each("errors"), each("deprecated")


@pytest.fixture(scope="module")
def python_report() -> dict[str, Any]:
    return validate_json(*MANIFESTS)


@pytest.fixture(scope="module")
def node_report(node_toolchain: Any) -> dict[str, Any]:
    schemas = ROOT / "schemas"
    args = ("--schemas", schemas, "--spec", "TrainingManifest", "--issues", *MANIFESTS)
    result = node_toolchain.run("validate.mjs", *args)
    assert result.returncode in (0, 1), f"validate.mjs --issues failed:\n{result.stderr}"
    return json.loads(result.stdout)


def test_corpus_is_there() -> None:
    assert len(MANIFESTS) >= 70
    names = {path.name for path in (CORPUS / "invalid").glob("*.yaml")}
    assert set(WORDED_DIFFERENTLY) <= names, set(WORDED_DIFFERENTLY) - names


@pytest.mark.node
@pytest.mark.parametrize("manifest", params())
def test_same_issues_as_agilerl_validate(
    manifest: Path, python_report: dict[str, Any], node_report: dict[str, Any]
) -> None:
    expected = located(python_report[str(manifest)])
    assert located(node_report[str(manifest)]) == expected
