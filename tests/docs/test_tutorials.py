"""Every tutorial's files run, with a small budget, and do what its page says.

Each tutorial lives in ``examples/tutorials/<name>/`` (the page ``docs/tutorials/<name>.md``
includes those very files). A test copies the folder into a scratch directory, runs its
manifests with ``agilerl`` and its scripts with this interpreter, one torch thread, and
asserts the outcome: the files a run writes, a score where learning is quick, the
figures an evaluation returns. Runs that train are ``slow``; each takes seconds to a
minute on one CPU thread.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import MADE_BY_TUTORIALS, ROOT

TUTORIALS = ROOT / "examples" / "tutorials"
PAGES = ROOT / "docs" / "tutorials"
NAMES = sorted(p.name for p in TUTORIALS.iterdir() if p.is_dir())


def run(*args: str | Path, cwd: Path, timeout: int = 600) -> str:
    """Run ``agilerl ARGS`` (when ``args[0]`` is not a ``.py`` file) or ``python SCRIPT
    ARGS`` in ``cwd``; its stdout, after asserting it succeeded."""
    first = str(args[0])
    command = (
        [sys.executable, *map(str, args)]
        if first.endswith(".py")
        else [sys.executable, "-m", "agilerl", *map(str, args)]
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "WANDB_MODE": "offline"}
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(command)}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A scratch directory with ``examples/tutorials/`` copied in, as a checkout holds it."""
    made = shutil.ignore_patterns(*MADE_BY_TUTORIALS)
    shutil.copytree(TUTORIALS, tmp_path / "examples" / "tutorials", ignore=made)
    return tmp_path


def history(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "history.json").read_text())


def best_fitness(run_dir: Path) -> float:
    return max(a["fitness"] for g in history(run_dir) for a in g["agents"])


def outputs_written(run_dir: Path) -> None:
    for name in ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png", "history.json"):
        assert (run_dir / name).is_file(), f"{run_dir / name} was not written"


# --- fast: the tutorials and their pages match, the manifests validate -------------------


def test_every_tutorial_has_a_page_and_every_page_a_tutorial():
    pages = {p.stem for p in PAGES.glob("*.md")} - {"index"}
    assert pages == set(NAMES)


def test_the_index_lists_every_tutorial():
    index = (PAGES / "index.md").read_text(encoding="utf-8")
    assert all(f"({name}.md)" in index for name in NAMES)


def test_every_tutorial_manifest_validates():
    manifests = sorted(TUTORIALS.rglob("*.yaml"))
    assert len(manifests) >= 12
    run("validate", *manifests, cwd=ROOT)


def test_the_bandit_tables_are_the_ones_make_tables_writes(tmp_path):
    shutil.copy(TUTORIALS / "bandit" / "make_tables.py", tmp_path)
    run(tmp_path / "make_tables.py", cwd=tmp_path)
    for name in ("features.csv", "targets.csv"):
        assert (tmp_path / name).read_text() == (TUTORIALS / "bandit" / name).read_text()


# --- slow: each tutorial runs and does what its page says ------------------------------


@pytest.mark.slow
def test_own_environment_learns_the_shortest_walk_from_a_manifest_and_from_python(work):
    here = work / "examples/tutorials/own-environment"
    run("train", here / "gridwalk.yaml", "--out", work / "runs/gridwalk", "--quiet", cwd=work)
    assert best_fitness(work / "runs/gridwalk") == pytest.approx(0.75)  # six moves
    out = run(here / "train.py", cwd=work)
    assert "return  0.75 +/- 0.00" in out  # train_agent's agent walks the shortest way


@pytest.mark.slow
def test_own_network_trains_with_the_manifest_network_and_in_python(work):
    here = work / "examples/tutorials/own-network"
    out_dir = work / "runs/network"
    run("train", here / "network.yaml", "--out", out_dir, "--quiet", cwd=work)
    outputs_written(out_dir)
    encoder = (out_dir / "manifest.yaml").read_text()
    assert "layer_norm: true" in encoder and "Tanh" in encoder
    assert best_fitness(out_dir) > 100  # CartPole: random is about 22
    out = run(here / "network.py", cwd=work)
    assert "SimbaSpec" in out and "min_mlp_nodes" in out  # the refused spec names its rule


@pytest.mark.slow
def test_hpo_selects_and_mutates_and_history_reads_it_back(work):
    here = work / "examples/tutorials/hpo"
    run("train", here / "hpo.yaml", "--out", work / "runs/hpo", "--quiet", cwd=work)
    records = history(work / "runs/hpo")
    assert len(records) == 4 and all(len(g["agents"]) == 4 for g in records)
    indices = [{a["index"] for a in g["agents"]} for g in records]
    assert indices[0] != indices[-1]  # selection replaced agents by mutated children
    assert any("(elite)" in str(a["mutation"]) for g in records[1:] for a in g["agents"])
    assert (work / "runs/hpo/fitness.png").stat().st_size > 0
    out = run(here / "history.py", work / "runs/hpo", cwd=work)
    assert out.count("generation ") == 4


@pytest.mark.slow
def test_resuming_gives_the_uninterrupted_run(work):
    here = work / "examples/tutorials/resuming"
    out = run(here / "resume.py", cwd=work)  # asserts equal histories itself
    assert "the resumed run is the uninterrupted one" in out
    # The CLI way: stop at half the budget, resume with the manifest's whole budget.
    args = ("train", here / "cartpole.yaml", "--out", work / "runs/cli", "--quiet")
    run(*args, "--set", "training.max_steps=1000", cwd=work)
    assert len(history(work / "runs/cli")) == 2
    run(*args, "--resume", cwd=work)

    def fitnesses(run_dir: Path) -> list[list[tuple[int, float]]]:
        return [[(a["index"], a["fitness"]) for a in g["agents"]] for g in history(run_dir)]

    assert fitnesses(work / "runs/cli") == fitnesses(work / "runs/resume-a")


@pytest.mark.slow
def test_tracking_writes_tensorboard_and_wandb_and_the_callback_stops_the_run(work):
    out = run(work / "examples/tutorials/tracking/tracking.py", cwd=work)
    # Generation 0's best is 265.8, generation 1's 287.4: the callback stops the run there.
    assert "the run ended: callback" in out and "generation 2:" not in out
    assert list((work / "runs/tb/tracking").glob("events.out.tfevents.*"))
    assert list((work / "wandb").glob("offline-run-*"))
    assert "eval/best_fitness" in out


@pytest.mark.slow
def test_evaluation_from_the_cli_and_python_returns_numbers_and_a_video(work):
    here = work / "examples/tutorials/evaluation"
    out_dir = work / "runs/evaluation"
    run("train", here / "cartpole.yaml", "--out", out_dir, "--quiet", cwd=work)
    agent = out_dir / "best_agent.pt"
    report = json.loads(run("evaluate", agent, "--episodes", "3", "--format", "json", cwd=work))
    assert len(report["returns"]) == 3 and report["mean_return"] > 100
    run("evaluate", agent, "--episodes", "1", "--video", out_dir / "cartpole.gif", cwd=work)
    assert (out_dir / "cartpole.gif").stat().st_size > 0
    out = run(here / "evaluate.py", out_dir, cwd=work)
    assert "own loop return" in out and (out_dir / "play.gif").is_file()


@pytest.mark.slow
def test_multi_agent_teams_learn_the_cue_game(work):
    here = work / "examples/tutorials/multi-agent"
    run("train", here / "cue_game.yaml", "--out", work / "runs/cue", "--quiet", cwd=work)
    assert best_fitness(work / "runs/cue") >= 6.0  # best 7, a random team 2
    out = run(here / "team.py", cwd=work)
    assert "fitness/seer" in out and "actions {" in out


@pytest.mark.slow
def test_multi_agent_speaker_listener_trains_briefly(work):
    out_dir = work / "runs/speaker_listener"
    run(
        "train",
        work / "examples/tutorials/multi-agent/speaker_listener.yaml",
        "--out",
        out_dir,
        "--set",
        "training.max_steps=1024",
        "--set",
        "training.evo_steps=512",
        "--set",
        "training.pop_size=2",
        "--set",
        "environment.sync=true",
        "--quiet",
        cwd=work,
    )
    outputs_written(out_dir)
    metrics = history(out_dir)[-1]["agents"][0]["metrics"]
    assert {"fitness/speaker", "fitness/listener"} <= set(metrics)


@pytest.mark.slow
def test_offline_collect_then_cqn_and_a_dataset_of_your_own(work):
    here = work / "examples/tutorials/offline"
    run(
        "dataset",
        "collect",
        here / "cqn.yaml",
        "-o",
        here / "cartpole.h5",
        "--steps",
        "2000",
        cwd=work,
    )
    run(
        "train",
        here / "cqn.yaml",
        "--out",
        work / "runs/cqn",
        "--quiet",
        "--set",
        "training.max_steps=400",
        "--set",
        "training.evo_steps=200",
        cwd=work,
    )
    outputs_written(work / "runs/cqn")
    out = run(here / "own_dataset.py", cwd=work)
    assert "20000 transitions" in out
    assert best_fitness(work / "runs/cqn-own") >= 195  # CartPole's "solved"


@pytest.mark.slow
def test_bandit_from_csv_tables_reaches_a_high_reward_rate(work):
    out_dir = work / "runs/bandit"
    run(
        "train",
        work / "examples/tutorials/bandit/neural_ucb.yaml",
        "--out",
        out_dir,
        "--quiet",
        cwd=work,
    )
    outputs_written(out_dir)
    assert (out_dir / "regret.png").is_file()
    assert best_fitness(out_dir) >= 0.9  # a reward rate; a random arm's is about 1/3
    with open(work / "examples/tutorials/bandit/targets.csv") as f:
        assert len({row["route"] for row in csv.DictReader(f)}) == 3


@pytest.mark.slow
def test_llm_fine_tuning_on_the_tiny_model(work):
    here = work / "examples/tutorials/llm"
    run("llm", "tiny", here / "tiny-llm", cwd=work)
    for algorithm in ("grpo", "dpo"):
        out_dir = work / "runs" / algorithm
        run(
            "train",
            here / f"{algorithm}.yaml",
            "--out",
            out_dir,
            "--quiet",
            "--set",
            "training.max_steps=4",
            "--set",
            "training.evo_steps=2",
            "--set",
            "training.evaluation_interval=2",
            cwd=work,
        )
        outputs_written(out_dir)
    run("train", here / "sft.yaml", "--out", work / "runs/sft", "--quiet", cwd=work)
    assert (work / "runs/sft/best_adapter").is_dir()
    out = run(here / "adapter.py", work / "runs/sft", cwd=work)
    base, tuned = (float(x.split()[-1]) for x in out.split("log p(answer):")[1].split(","))
    assert tuned > base


@pytest.mark.slow
def test_distributed_two_processes_give_the_one_process_history(work):
    here = work / "examples/tutorials/distributed"
    run("train", here / "ppo.yaml", "--out", work / "runs/dist-1", "--quiet", cwd=work)
    run(
        "train",
        here / "ppo.yaml",
        "--processes",
        "2",
        "--out",
        work / "runs/dist-2",
        "--quiet",
        cwd=work,
    )
    out = run(here / "compare.py", work / "runs/dist-1", work / "runs/dist-2", cwd=work)
    assert "the same 2 generations on both" in out
