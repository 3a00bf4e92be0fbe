"""A JSON Schema validator that is not ours agrees with ``agilerl validate``.

``jsonschema_rs`` (a Rust implementation of draft 2020-12, knowing none of our keywords)
is given the bundled manifest schema, exactly what ``agilerl schema`` prints, and judges
every manifest of the corpora; ``agilerl validate`` judges the same files. They must
agree on every document, except where the only broken rule is one JSON Schema cannot
state, which lives in our own vocabulary (``x-agilerl-rules``, ``x-agilerl-renamed``;
docs/reference/rules-vocabulary.md) or which only a run knows. Those documents are
listed below, each with the reason; the list is exact both ways (a listed document on
which the two agree fails too), so a rule moved into standard keywords takes its
documents off the list.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from support import ROOT, TESTS

from agilerl import cli
from agilerl.files.documents import load_document
from agilerl.files.schema import bundle_schema

jsonschema_rs = pytest.importorskip("jsonschema_rs")

#: Where the manifests come from: AgileRL's published ones, the valid/invalid corpus, and
#: the repository's own configs and benchmark manifests.
CORPORA = (
    TESTS / "agilerl_manifests",
    TESTS / "manifest_corpus",
    ROOT / "configs",
    ROOT / "benchmarks",
)

#: Why a document may be valid for a standard validator and invalid for ``agilerl
#: validate``: the only reasons that may remain.
COMPARISON = "a comparison between two values of the document, which JSON Schema cannot state"
RUN_ONLY = "what only a run knows (the installed packages), not a property of the document"

#: Documents the standard validator accepts and ``agilerl validate`` refuses: path (from
#: the repository root) -> (the rule that refuses it, the reason no standard keyword can).
UNSTATABLE: dict[str, tuple[str, str]] = {
    "tests/manifest_corpus/invalid/encoder_breaks_its_rule.yaml": (
        "mlp: every item of hidden_size within [min_mlp_nodes, max_mlp_nodes]",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/eps_end_above_eps_start.yaml": (
        "training: eps_end atMost eps_start",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/evo_steps_above_max_steps.yaml": (
        "training: evo_steps atMost max_steps",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/legacy_key_breaks_a_rule.yaml": (
        "training: evo_steps atMost max_steps (evo_steps written under its old name)",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/legacy_key_conflict.yaml": (
        "x-agilerl-renamed: an old key and its new name given with different values",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/ppo_num_envs_disagrees.yaml": (
        "manifest: algorithm.num_envs sameAs environment.num_envs",
        COMPARISON,
    ),
    "tests/manifest_corpus/invalid/rl_hp_min_not_below_max.yaml": (
        "mutation: an rl_hp_selection range's min below its max",
        COMPARISON,
    ),
    "tests/agilerl_manifests/configs/llm_finetuning/grpo_multiturn.yaml": (
        "a GEM environment id needs the gem-llm package",
        RUN_ONLY,
    ),
    "tests/agilerl_manifests/configs/llm_finetuning/reinforce_quant_bench.yaml": (
        "a GEM environment id needs the gem-llm package",
        RUN_ONLY,
    ),
}

MANIFESTS = sorted(path for corpus in CORPORA for path in corpus.rglob("*.yaml"))


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def standard() -> Any:
    """The Rust validator of the bundled manifest schema (``agilerl schema``'s output)."""
    return jsonschema_rs.Draft202012Validator(bundle_schema("TrainingManifest"))


@pytest.fixture(scope="module")
def agilerl_report() -> dict[str, Any]:
    """``agilerl validate --format json``'s report on every manifest, keyed by path."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli.main(["validate", "--format", "json", *map(str, MANIFESTS)])
    return json.loads(out.getvalue())


def test_the_corpora_are_there() -> None:
    # 50 of AgileRL's, 70 of the valid/invalid corpus, the configs and benchmarks
    assert len(MANIFESTS) >= 140, len(MANIFESTS)
    assert set(UNSTATABLE) <= {rel(path) for path in MANIFESTS}


def test_every_remaining_disagreement_is_unstatable() -> None:
    assert {reason for _, reason in UNSTATABLE.values()} <= {COMPARISON, RUN_ONLY}


@pytest.mark.parametrize("path", MANIFESTS, ids=rel)
def test_verdicts_agree(path: Path, standard: Any, agilerl_report: dict[str, Any]) -> None:
    document = load_document(path)[0]
    ours = agilerl_report[str(path)]
    theirs = [f"{error.instance_path}: {error.message}" for error in standard.iter_errors(document)]
    verdicts = {"agilerl validate": ours["valid"], "jsonschema_rs": not theirs}
    if rel(path) in UNSTATABLE:
        rule, reason = UNSTATABLE[rel(path)]
        assert verdicts == {"agilerl validate": False, "jsonschema_rs": True}, (
            f"{rel(path)} is listed as refused only by {rule!r} ({reason}), "
            f"but the verdicts are {verdicts}: take it off UNSTATABLE"
        )
    else:
        assert verdicts["agilerl validate"] == verdicts["jsonschema_rs"], (
            f"{rel(path)}: {verdicts}\n  agilerl validate: {ours.get('errors')}\n"
            f"  jsonschema_rs: {theirs}"
        )
