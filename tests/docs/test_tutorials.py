"""Every tutorial's page runs as written and does what it says.

Each tutorial lives in ``examples/tutorials/<name>/`` (the page ``docs/tutorials/<name>.md``
includes those very files). Its test runs the page's commands as a reader would, in a
scratch directory holding a clone's ``configs/`` and ``examples/`` (``support.page_runs``,
the runner of every docs page's snippets, one torch thread), then asserts the outcome:
the files a run writes, a score where learning is quick, the figures an evaluation
returns. Runs that train are ``slow``; a page takes 20 s to a minute and a half on one
CPU thread.
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
from support import ROOT
from support.page_runs import RUN_ENV, PageRun, run_page

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
    env = {**os.environ, **RUN_ENV}
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (
        f"{' '.join(command)}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


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


# --- slow: each tutorial's page runs as written and does what it says -------------------
# One check per tutorial, named for what its page promises; it reads the outputs of the
# page's own commands (support.page_runs runs them in a scratch directory, as a reader
# would from a clone), so a tutorial trains once in the suite, at the budget its page gives.


def own_environment_learns_the_shortest_walk_from_a_manifest_and_from_python(run: PageRun):
    assert best_fitness(run.cwd / "runs/gridwalk") == pytest.approx(0.75)  # six moves
    assert "return  0.75 +/- 0.00" in run.output("own-environment/train.py")
    assert "return  0.75 +/- 0.00" in run.output("agilerl evaluate")


def own_network_trains_with_the_manifest_network_and_in_python(run: PageRun):
    out_dir = run.cwd / "runs/network"
    outputs_written(out_dir)
    encoder = (out_dir / "manifest.yaml").read_text()
    assert "layer_norm: true" in encoder and "Tanh" in encoder
    assert best_fitness(out_dir) > 100  # CartPole: random is about 22
    out = run.output("own-network/network.py")
    assert "SimbaSpec" in out and "min_mlp_nodes" in out  # the refused spec names its rule


def hpo_selects_and_mutates_and_history_reads_it_back(run: PageRun):
    records = history(run.cwd / "runs/hpo")
    assert len(records) == 4 and all(len(g["agents"]) == 4 for g in records)
    indices = [{a["index"] for a in g["agents"]} for g in records]
    assert indices[0] != indices[-1]  # selection replaced agents by mutated children
    assert any("(elite)" in str(a["mutation"]) for g in records[1:] for a in g["agents"])
    assert (run.cwd / "runs/hpo/fitness.png").stat().st_size > 0
    assert run.output("hpo/history.py").count("generation ") == 4


def resuming_gives_the_uninterrupted_run(run: PageRun):
    # resume.py asserts equal histories itself
    assert "the resumed run is the uninterrupted one" in run.output("resuming/resume.py")
    # The CLI way: stopped at half the budget, resumed with the manifest's whole budget.
    assert "resuming from" in run.output("--resume", "stderr")

    def fitnesses(run_dir: Path) -> list[list[tuple[int, float]]]:
        return [[(a["index"], a["fitness"]) for a in g["agents"]] for g in history(run_dir)]

    assert fitnesses(run.cwd / "runs/resuming") == fitnesses(run.cwd / "runs/resume-a")


def tracking_writes_tensorboard_and_wandb_and_the_callback_stops_the_run(run: PageRun):
    out = run.output("tracking/tracking.py")
    # Generation 0's best (265.8 on 2026-12-07) reaches the callback's 250: it stops the
    # run there, generations before the budget's end (4).
    assert "generation 0:" in out
    assert "the run ended: callback" in out and "generation 1:" not in out
    assert list((run.cwd / "runs/tb/tracking").glob("events.out.tfevents.*"))
    assert list((run.cwd / "runs/tb/tracking-2").glob("events.out.tfevents.*"))
    assert list((run.cwd / "wandb").glob("offline-run-*"))
    assert "eval/best_fitness" in out


def evaluation_from_the_cli_and_python_returns_numbers_and_a_video(run: PageRun):
    out_dir = run.cwd / "runs/evaluation"
    report = json.loads(run.output("--format json"))
    assert len(report["returns"]) == 2 and report["mean_return"] > 100
    assert (out_dir / "cartpole.gif").stat().st_size > 0
    out = run.output("evaluation/evaluate.py")
    assert "own loop return" in out and (out_dir / "play.gif").is_file()


def multi_agent_teams_learn_the_cue_game_and_speaker_listener_trains(run: PageRun):
    assert best_fitness(run.cwd / "runs/cue_game") >= 6.0  # best 7, a random team 2
    out = run.output("multi-agent/team.py")
    assert "fitness/seer" in out and "actions {" in out
    out_dir = run.cwd / "runs/speaker_listener"
    outputs_written(out_dir)
    metrics = history(out_dir)[-1]["agents"][0]["metrics"]
    assert {"fitness/speaker", "fitness/listener"} <= set(metrics)


def offline_collect_then_cqn_and_a_dataset_of_your_own(run: PageRun):
    outputs_written(run.cwd / "runs/cqn")
    assert (run.cwd / "examples/tutorials/offline/cartpole.h5").is_file()
    assert "5 episodes, seeds 0..4" in run.output("agilerl evaluate runs/cqn")
    assert "20000 transitions" in run.output("own_dataset.py")
    assert best_fitness(run.cwd / "runs/cqn-own") >= 195  # CartPole's "solved"


def bandit_from_csv_tables_reaches_a_high_reward_rate(run: PageRun):
    out_dir = run.cwd / "runs/bandit"
    outputs_written(out_dir)
    assert (out_dir / "regret.png").is_file()
    assert best_fitness(out_dir) >= 0.9  # a reward rate; a random arm's is about 1/3
    with open(run.cwd / "examples/tutorials/bandit/targets.csv") as f:
        assert len({row["route"] for row in csv.DictReader(f)}) == 3


def llm_fine_tuning_on_the_tiny_model(run: PageRun):
    for algorithm in ("grpo", "dpo", "sft"):
        outputs_written(run.cwd / "runs" / algorithm)
    assert (run.cwd / "runs/sft/best_adapter").is_dir()
    out = run.output("llm/adapter.py")
    base, tuned = (float(x.split()[-1]) for x in out.split("log p(answer):")[1].split(","))
    assert tuned > base


def distributed_two_processes_give_the_one_process_history(run: PageRun):
    assert "the same 2 generations on both" in run.output("distributed/compare.py")


#: Tutorial -> what its page promises, checked after the page has run.
OUTCOMES = {
    "own-environment": own_environment_learns_the_shortest_walk_from_a_manifest_and_from_python,
    "own-network": own_network_trains_with_the_manifest_network_and_in_python,
    "hpo": hpo_selects_and_mutates_and_history_reads_it_back,
    "resuming": resuming_gives_the_uninterrupted_run,
    "tracking": tracking_writes_tensorboard_and_wandb_and_the_callback_stops_the_run,
    "evaluation": evaluation_from_the_cli_and_python_returns_numbers_and_a_video,
    "multi-agent": multi_agent_teams_learn_the_cue_game_and_speaker_listener_trains,
    "offline": offline_collect_then_cqn_and_a_dataset_of_your_own,
    "bandit": bandit_from_csv_tables_reaches_a_high_reward_rate,
    "llm": llm_fine_tuning_on_the_tiny_model,
    "distributed": distributed_two_processes_give_the_one_process_history,
}


def test_every_tutorial_has_its_outcome_checked():
    assert set(OUTCOMES) == set(NAMES)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_tutorial_page_runs_as_written_and_does_what_it_says(name, tmp_path):
    OUTCOMES[name](run_page(PAGES / f"{name}.md", tmp_path))
