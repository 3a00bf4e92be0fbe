"""The trainer's bandit row (agilerl/families/bandits/family.py): every ``configs/``
bandit manifest and AgileRL's own through ``agilerl train``, the refusals before the first
step, kill-and-resume, a bandit from an entry point, and a table of one label refused
from every source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import ROOT
from support.bandits import write

from agilerl.cli import main
from agilerl.families.bandits import BanditEnv

# --- the trainer: agilerl train ---------------------------------------------------------

BRIEF = ["--set", "training.max_steps=60", "--set", "training.evo_steps=30",
         "--set", "training.eval_steps=20", "--set", "algorithm.batch_size=8",
         "--set", "training.pop_size=2", "--set", "training.seed=3"]  # fmt: skip


def train(capsys, manifest, out, *args):
    rc = main(["train", str(manifest), "--out", str(out), *args])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name", ["neural_ucb", "neural_ts"])
def test_each_bandit_manifest_trains_briefly_through_agilerl_train(name, tmp_path, capsys):
    rc, err = train(capsys, ROOT / "configs" / f"{name}.yaml", tmp_path, *BRIEF)
    assert rc == 0, err
    # The table speaks the bandit's terms, and shows the reward rate once.
    head = next(line for line in err.splitlines() if line.lstrip().startswith("agent "))
    assert "train reward rate" in head and "regret" in head and "reward_rate" not in head
    for output in ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png",
                   "history.json", "checkpoint.pt", "regret.png"):  # fmt: skip
        assert (tmp_path / output).is_file(), output
    history = json.loads((tmp_path / "history.json").read_text())
    assert len(history) == 2
    for agent in history[-1]["agents"]:
        assert 0.0 <= agent["fitness"] <= 1.0 and agent["metrics"]["regret"] >= 0
    written = (tmp_path / "manifest.yaml").read_text()
    assert str(ROOT / "configs" / "data" / "iris_features.csv") in written  # absolute now
    # agilerl evaluate pulls greedily on the tables the agent file records (absolute paths)
    args = ["evaluate", str(tmp_path / "best_agent.pt"), "--episodes", "2"]
    assert main([*args, "--max-episode-steps", "50", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["episodes"] == 2 and all(0.0 <= r <= 1.0 for r in report["returns"])


def bandit_manifest(tmp_path, **environment):
    text = (ROOT / "configs" / "neural_ucb.yaml").read_text()
    data = ROOT / "configs" / "data"
    text = text.replace(
        "data/iris_features.csv", str(environment.get("features", data / "iris_features.csv"))
    )
    text = text.replace(
        "data/iris_targets.csv", str(environment.get("targets", data / "iris_targets.csv"))
    )
    return write(tmp_path / "bandit.yaml", text)


TRAIN_REFUSALS = {
    "missing table": ({"features": "nowhere.csv"}, [], "nowhere.csv: features table not found"),
    "row counts differ": ({"targets": "short.csv"}, [], "short.csv:3 is the first row missing"),
    "one label": ({"targets": "one.csv"}, [], "one.csv: every row has the label 'setosa'"),
    "epsilon-greedy": ({}, ["--set", "training.eps_start=0.5"], "training.eps_start"),
    "learning delay": ({}, ["--set", "training.learning_delay=10"], "training.learning_delay"),
    "uniform warm-up": (
        {},
        ["--set", "training.warmup_actions=uniform"],
        "training.warmup_actions",
    ),
    "batch beyond memory": ({}, ["--set", "replay_buffer.max_size=4"], "algorithm.batch_size"),
    "summed-reward target": ({}, ["--set", "training.target_score=96"], "training.target_score"),
}


@pytest.mark.parametrize("case", sorted(TRAIN_REFUSALS))
def test_each_run_refusal_names_its_cause_before_the_first_step(case, tmp_path, capsys):
    environment, args, message = TRAIN_REFUSALS[case]
    write(tmp_path / "short.csv", "species\nsetosa\n")
    write(tmp_path / "one.csv", "species\n" + "setosa\n" * 150)  # as many rows as iris
    environment = {k: tmp_path / v for k, v in environment.items()}
    manifest = bandit_manifest(tmp_path, **environment)
    rc, err = train(capsys, manifest, tmp_path / "out", *BRIEF, *args)
    assert rc == 1, err
    assert "Traceback" not in err
    assert message in err[err.index("agilerl: ") :], err
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


@pytest.mark.parametrize(
    "name",
    [
        "configs/bandit/neural_ucb",
        "configs/bandit/neural_ts",
        "configs/bandit/neural_ucb_mfpbt",
        "tests/neural_ucb",  # replay_buffer.memory_size: AgileRL's old spelling
        "tests/neural_ts",  # (the same)
    ],
)
def test_agilerls_own_bandit_manifests_train_with_a_rate_target(name, tmp_path):
    """AgileRL's bandit manifests as written, but for the budget and the target (theirs
    sums rewards over eval_steps: 96 and 450), with their tables where they name them
    (tests/data/, relative to where the run starts)."""
    import shutil

    from agilerl.files.documents import load_document
    from agilerl.models.manifest import parse_manifest
    from agilerl.trainer import LocalTrainer

    data, _ = load_document(ROOT / "tests" / "agilerl_manifests" / f"{name}.yaml")
    (tmp_path / "tests" / "data").mkdir(parents=True)
    for table in ("iris_features.csv", "iris_targets.csv"):
        shutil.copy(ROOT / "configs" / "data" / table, tmp_path / "tests" / "data" / table)
    data["training"].update(max_steps=40, evo_steps=20, eval_steps=20, target_score=0.99, seed=0)
    data["algorithm"]["batch_size"] = 8
    trainer = LocalTrainer.from_manifest(parse_manifest(data), base_dir=tmp_path)
    population, fitnesses = trainer.train(verbose=False)
    assert len(population) == trainer.training.pop_size and all(0 <= f <= 1 for f in fitnesses)
    assert trainer.state.finished in ("max_steps", "target_score")


def test_a_memory_beyond_the_machine_is_refused_with_the_figures():
    from agilerl.trainer import LocalTrainer
    from agilerl.training.preflight import PreflightError

    trainer = LocalTrainer.from_manifest(ROOT / "configs" / "neural_ucb.yaml")
    found = trainer.preflight(available=10**9)  # 100,000 pulls of 52 B fit
    assert [n.field for n in found.needs] == ["training.pop_size", "replay_buffer.max_size"]
    assert found.needs[1].bytes == 100_000 * (4 * 12 + 4)
    with pytest.raises(PreflightError, match=r"replay_buffer.max_size: 100,000 pulls of 52 B"):
        trainer.preflight(available=10**6)


@pytest.mark.slow
def test_a_killed_bandit_run_resumes_where_it_stood(tmp_path, capsys):
    """Killed at its first checkpoint and resumed, a NeuralTS run gives the fitnesses
    and regrets an uninterrupted run gives (agents, posteriors, memory, RNG came back)."""
    from support.killed_runs import kill_at_first_checkpoint

    steps = [*BRIEF, "--set", "training.max_steps=90", "--quiet"]
    manifest = ROOT / "configs" / "neural_ts.yaml"
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert train(capsys, manifest, whole, *steps)[0] == 0
    command = [
        sys.executable,
        "-m",
        "agilerl.cli",
        "train",
        str(manifest),
        "--out",
        str(killed),
        *steps,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    kill_at_first_checkpoint(command, killed / "checkpoint.pt", env)
    assert not (killed / "history.json").exists()  # it did not finish
    result = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stdout  # in the one line of --quiet

    def figures(run):
        history = json.loads((run / "history.json").read_text())
        return [[(a["fitness"], a["metrics"]["regret"]) for a in g["agents"]] for g in history]

    assert len(figures(whole)) == 3
    assert figures(killed) == figures(whole)


# --- a bandit from an entry point --------------------------------------------------------

ENTRY = '''
import numpy as np

from agilerl.families.bandits import BanditEnv


def make_bandit(rows=200):
    """A table built in code: the class is the sign of the first feature."""
    features = np.random.default_rng(0).normal(size=(rows, 3)).astype(np.float32)
    return BanditEnv(features, np.where(features[:, 0] > 0, "up", "down"), name="signs")


def not_a_bandit():
    return "a table"
'''


def entry_manifest(tmp_path, environment: str) -> Path:
    text = (ROOT / "configs" / "neural_ucb.yaml").read_text()
    start, end = text.index("environment:\n"), text.index("network:\n")
    return write(tmp_path / "bandit.yaml", text[:start] + environment + text[end:])


def test_a_bandit_from_an_entry_point_validates_trains_and_evaluates_from_elsewhere(
    tmp_path, capsys, monkeypatch
):
    write(tmp_path / "bandits.py", ENTRY)
    manifest = entry_manifest(
        tmp_path,
        "environment:\n  name: signs\n  entrypoint: bandits.py:make_bandit\n"
        "  config: {rows: 120}\n",
    )
    assert main(["validate", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "environment.entrypoint -> bandits.py:make_bandit" in out, out
    rc, err = train(capsys, manifest, tmp_path / "run", *BRIEF)
    assert rc == 0, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the recorded path finds bandits.py from anywhere
    agent = str(tmp_path / "run" / "best_agent.pt")
    args = ["evaluate", agent, "--episodes", "2", "--max-episode-steps", "50"]
    assert main([*args, "--trust-agent-code", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["returns"]) == 2 and all(0 <= r <= 1 for r in result["returns"])


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        (
            "environment:\n  entrypoint: bandits.py:make_bandit\n  features: f.csv\n",
            "environment.features: the bandit comes from environment.entrypoint",
        ),
        (
            "environment:\n  name: IRIS\n",
            "environment.features: a contextual bandit manifest names both tables",
        ),
    ],
)
def test_a_bandit_manifest_names_its_tables_or_an_entry_point_not_both(
    environment, message, tmp_path, capsys
):
    manifest = entry_manifest(tmp_path, environment)
    assert main(["validate", str(manifest)]) == 1
    assert message in capsys.readouterr().err


def test_an_entry_point_that_returns_no_bandit_is_refused_before_the_first_step(tmp_path, capsys):
    write(tmp_path / "bandits.py", ENTRY)
    manifest = entry_manifest(tmp_path, "environment:\n  entrypoint: bandits.py:not_a_bandit\n")
    rc, err = train(capsys, manifest, tmp_path / "run", *BRIEF)
    assert rc == 1 and "Traceback" not in err
    assert "environment.entrypoint: bandits.py:not_a_bandit returned a str, not a BanditEnv" in err
    assert not (tmp_path / "run" / "best_agent.pt").exists()


# --- one label: the same refusal from every source ----------------------------------------

ONE_ARM = (
    "every row has the label {label}: a bandit needs at least 2 distinct labels (one arm per "
    "label), and with one the only arm always pays"
)

ZEROS = """
import numpy as np

from agilerl.families.bandits import BanditEnv


def make():
    return BanditEnv(np.ones((200, 4)), np.zeros(200))
"""


#: 200 rows whose labels are all 0.
ONE_LABEL = (np.random.default_rng(0).normal(size=(200, 4)), np.zeros(200))
BUDGET = {"max_steps": 60, "evo_steps": 30, "eval_steps": 20, "pop_size": 2, "seed": 0}


def one_label_tables(tmp_path: Path) -> dict[str, str]:
    features, targets = ONE_LABEL
    rows = "".join(",".join(f"{v:.6f}" for v in row) + "\n" for row in features)
    write(tmp_path / "f.csv", "a,b,c,d\n" + rows)
    write(tmp_path / "t.csv", "label\n" + "".join(f"{t:g}\n" for t in targets))
    return {"features": str(tmp_path / "f.csv"), "targets": str(tmp_path / "t.csv")}


def one_label_entry_point(tmp_path: Path) -> dict[str, str]:
    write(tmp_path / "zeros.py", ZEROS)
    return {"entrypoint": "zeros:make", "path": str(tmp_path)}


#: Each source of the one-label table -> the run's arguments, where its refusal names,
#: the label as that source gives it (CSV labels are text).
ONE_LABEL_SOURCES = {
    "tables": (
        lambda tmp: {"environment": one_label_tables(tmp)},
        "environment: {tmp}/t.csv",
        "'0'",
    ),
    "env=": (lambda tmp: {"env": BanditEnv(*ONE_LABEL)}, "env: BanditEnv", "0.0"),
    "entrypoint": (
        lambda tmp: {"environment": one_label_entry_point(tmp)},
        "environment.entrypoint: zeros:make",
        "0.0",
    ),
}


@pytest.mark.parametrize("source", sorted(ONE_LABEL_SOURCES))
def test_a_bandit_of_one_label_is_refused_from_tables_from_env_and_from_an_entry_point(
    source, tmp_path
):
    """A one-arm bandit pays every pull (fitness 1.0, nothing learned): the tables, an
    object given in Python and an entry point's bandit meet one check, one reason."""
    from agilerl.trainer import LocalTrainer
    from agilerl.training.preflight import PreflightError

    arguments, where, label = ONE_LABEL_SOURCES[source]
    trainer = LocalTrainer("NeuralUCB", training=BUDGET, **arguments(tmp_path))
    out = tmp_path / "run"
    with pytest.raises(PreflightError) as err:
        trainer.train(verbose=False, output_dir=out)
    expected = f"{where.format(tmp=tmp_path)}: {ONE_ARM.format(label=label)}"
    assert str(err.value) == expected
    assert not out.exists()  # refused before anything was written
