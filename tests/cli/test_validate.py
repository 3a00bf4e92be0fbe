"""``agilerl validate`` (agilerl/cli/validate.py): every problem of a manifest located at
its file, line and column, no traceback, exit codes, the JSON report and ``--strict``."""

from __future__ import annotations

import json

import pytest
from support import ROOT, TESTS

from agilerl.cli import main
from agilerl.files.schema import validator_for
from agilerl.models import load_manifest

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
CORPUS_DIR = TESTS / "agilerl_manifests"


#: The batch no machine runs: more samples than the largest replay buffer holds (10**9).
NO_MACHINE_BATCH = "Input should be less than or equal to 1000000000 (found 1e+20)"


@pytest.mark.parametrize("config", ["dqn", "ppo", "maddpg", "neural_ucb", "grpo"])
def test_cli_validate_refuses_a_batch_size_no_machine_runs(config, tmp_path, capsys):
    """Every family's batch_size is bounded by the manifest (its schema's algorithm
    section) where replay_buffer.max_size is: validate refuses 1e20, not only train's
    pre-flight. The algorithm specs, AgileRL's API, stay bounded below only."""
    text = (ROOT / "configs" / f"{config}.yaml").read_text(encoding="utf-8")
    lines = text.splitlines()
    line = lines.index(next(row for row in lines if row.startswith("  batch_size: "))) + 1
    lines[line - 1] = "  batch_size: 1e20"
    path = tmp_path / f"{config}.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:3: algorithm.batch_size: {NO_MACHINE_BATCH}" in err
    assert "Traceback" not in err
    lines[line - 1] = "  batch_size: 1000000000"  # the bound itself validates
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    algorithm = load_manifest(path).algorithm  # its spec alone takes any batch_size
    type(algorithm).model_validate(
        {**algorithm.model_dump(exclude_unset=True), "batch_size": 10**20}
    )


def test_cli_validate_refuses_a_batch_size_range_no_machine_runs(tmp_path, capsys):
    text = (ROOT / "configs" / "dqn.yaml").read_text(encoding="utf-8")
    assert "    batch_size:\n      min: 64\n      max: 512\n" in text
    path = tmp_path / "dqn.yaml"
    path.write_text(text.replace("      max: 512\n", "      max: 1e20\n"), encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    message = (
        "mutation.rl_hp_selection.batch_size.max: DQN.batch_size must be >= 1 and <= 1000000000"
    )
    assert message in capsys.readouterr().err
    # the schema says it too (codegen/lint.py writes the bound into the range clauses)
    from agilerl.files.documents import load_document

    errors = list(validator_for("TrainingManifest").iter_errors(load_document(path)[0]))
    found = [
        (e.validator, list(e.absolute_path)) for error in errors for e in [error, *error.context]
    ]
    assert found and ("maximum", ["mutation", "rl_hp_selection", "batch_size", "max"]) in found


def test_cli_validate_exit_codes_and_json(capsys):
    assert main(["validate", *map(str, CONFIGS)]) == 0
    assert capsys.readouterr().out.count(": valid (") == len(CONFIGS)
    bad = CORPUS_DIR / "tests" / "dqn.yaml"  # an old spelling, refused by --strict
    good = next(path for path in CONFIGS if path.name == "cqn.yaml")  # no user code
    assert main(["validate", str(good), str(bad), "--format", "json", "--strict"]) == 1
    report = json.loads(capsys.readouterr().out)
    entry = report[str(good)]
    # (warnings: tests/cli/test_init.py; environment: tests/families/single_agent/test_vectorize.py)
    assert {k: v for k, v in entry.items() if k not in ("warnings", "environment")} == {
        "valid": True,
        "code": [],
    }
    assert entry.get("environment", "environment: ").startswith("environment: ")
    (error,) = report[str(bad)]["errors"]
    assert error["path"] == "tournament_selection" and error["line"] >= 1
