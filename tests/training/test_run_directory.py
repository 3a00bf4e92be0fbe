"""Runs never clobber each other; best_agent.pt is the best agent ever evaluated; the
final population is saved; a resumed run with a raised budget goes on; the progress bar
and a run's threads.

Fitness is scripted where the outcome must not depend on learning: ``scripted`` makes
every evaluation return the next value of a list (after playing its episodes), so a run
whose best agent is in an early generation is certain.
"""

import copy
import json
import re

import pytest
import torch
from support import ROOT

from agilerl.algorithms import DQN, RLAlgorithm
from agilerl.cli import main
from agilerl.families.single_agent import scoring
from agilerl.files.checkpoints import CheckpointError, load, save
from agilerl.models.manifest import load_manifest
from agilerl.trainer import LocalTrainer, TrainerError
from agilerl.training import threads as thread_rule
from agilerl.training.report import Progress
from agilerl.training.run_checkpoint import load_population, load_run
from agilerl.training.run_directory import EarlierRunError, remove_earlier_outputs

TINY = {
    "algorithm": {"name": "DQN", "batch_size": 16, "learn_step": 4},
    "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
    "network": {
        "arch": "mlp",
        "latent_dim": 8,
        "encoder_config": {"hidden_size": [8]},
        "head_config": {"hidden_size": [8]},
    },
    # one agent at a time: each evaluated alone, its episodes' returns what `scripted` says
    "training": {
        "max_steps": 200,
        "evo_steps": 100,
        "pop_size": 2,
        "eval_steps": 20,
        "seed": 1,
        "cohorts": False,
    },
    "mutation": {
        "probabilities": {"no_mut": 0.0, "params_mut": 1.0, "arch_mut": 0.0, "new_layer": 0.0},
        "rand_seed": 3,
    },
    "selection_strategy": {"tournament_size": 2, "elitism": True},
    "replay_buffer": {"max_size": 1000},
}
NET_128 = {
    "arch": "mlp",
    "latent_dim": 128,
    "encoder_config": {"hidden_size": [128]},
    "head_config": {"hidden_size": [128]},
}
CLI_SMALL = [
    "--set", "training.max_steps=100",
    "--set", "training.evo_steps=100",
    "--set", "training.pop_size=1",
    "--set", "training.eval_steps=20",
    "--set", "environment.num_envs=2",
    "--set", "environment.sync=true",
    "--set", "replay_buffer.max_size=500",
]  # fmt: skip
CONFIG = str(ROOT / "configs/dqn.yaml")


def tiny(**training):
    document = copy.deepcopy(TINY)
    document["training"].update(training)
    return document


@pytest.fixture
def scripted(monkeypatch):
    """``scripted(values)``: evaluations return ``values`` in turn (agent by agent)."""

    def script(values):
        values = iter(values)
        real = scoring.play_episodes

        def play(*args, **kwargs):
            returns, taken, cut = real(*args, **kwargs)
            return [[float(next(values))] for _ in returns], taken, cut  # each agent's mean

        monkeypatch.setattr(scoring, "play_episodes", play)

    return script


# --- an earlier run is never overwritten -------------------------------------------------


def test_cli_refuses_a_second_run_into_the_same_directory(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", CONFIG, *CLI_SMALL, "--out", str(out), "--quiet"]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    capsys.readouterr()
    assert main(["train", CONFIG, *CLI_SMALL, "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"agilerl: {out}: holds an earlier run's outputs (" in err
    assert "best_agent.pt" in err
    assert "--resume" in err and "--out DIR" in err and "--force" in err
    assert "Traceback" not in err
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    assert after == before  # not one byte of the earlier run changed


def test_cli_force_deletes_only_the_earlier_runs_files(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", CONFIG, *CLI_SMALL, "--out", str(out), "--quiet"]) == 0
    (out / "notes.txt").write_text("mine")
    (out / "checkpoint_100.pt").write_bytes(b"a kept copy of the earlier run")
    capsys.readouterr()
    assert main(["train", CONFIG, *CLI_SMALL, "--out", str(out), "--force"]) == 0
    err = capsys.readouterr().err
    deleted = re.search(r"replacing the earlier run: deleted (.*)", err).group(1)
    assert str(out / "checkpoint_100.pt") in deleted and str(out / "best_agent.pt") in deleted
    assert "notes.txt" not in deleted
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "checkpoint_100.pt").exists()
    assert len(json.loads((out / "history.json").read_text())) == 1  # the new run's


def test_force_also_deletes_the_familys_own_outputs_files_and_directories(tmp_path):
    # An LLM run writes best_adapter/ (a peft directory), a bandit run regret.png.
    (tmp_path / "best_agent.pt").write_bytes(b"agent")
    (tmp_path / "best_adapter").mkdir()
    (tmp_path / "best_adapter" / "adapter_model.safetensors").write_bytes(b"adapter")
    (tmp_path / "regret.png").write_bytes(b"png")
    (tmp_path / "notes").mkdir()  # the user's: stays
    removed = remove_earlier_outputs(tmp_path, None, ["best_adapter", "regret.png"])
    assert sorted(p.name for p in removed) == ["best_adapter", "best_agent.pt", "regret.png"]
    assert [p.name for p in tmp_path.iterdir()] == ["notes"]


def test_api_refuses_an_earlier_run_and_resumes_or_replaces_it(tmp_path):
    LocalTrainer.from_manifest(tiny()).train(verbose=False, output_dir=tmp_path)
    agent = (tmp_path / "best_agent.pt").read_bytes()
    with pytest.raises(EarlierRunError, match=r"holds an earlier run's outputs .*force=True"):
        LocalTrainer.from_manifest(tiny()).train(verbose=False, output_dir=tmp_path)
    assert (tmp_path / "best_agent.pt").read_bytes() == agent
    resumed = LocalTrainer.from_manifest(tiny(max_steps=300))
    resumed.train(verbose=False, output_dir=tmp_path, resume=True)
    assert [r["generation"] for r in resumed.state.history] == [0, 1, 2]  # continued
    fresh = LocalTrainer.from_manifest(tiny(max_steps=100))
    fresh.train(verbose=False, output_dir=tmp_path, force=True)
    assert len(json.loads((tmp_path / "history.json").read_text())) == 1


def test_an_existing_checkpoint_elsewhere_is_an_earlier_run_too(tmp_path):
    checkpoint = tmp_path / "shared" / "ck.pt"
    LocalTrainer.from_manifest(tiny()).train(verbose=False, checkpoint_path=checkpoint)
    saved = checkpoint.read_bytes()
    with pytest.raises(EarlierRunError, match=re.escape(f"{checkpoint.parent}: holds")):
        LocalTrainer.from_manifest(tiny()).train(
            verbose=False, output_dir=tmp_path / "new", checkpoint_path=checkpoint
        )
    assert checkpoint.read_bytes() == saved
    assert not (tmp_path / "new" / "best_agent.pt").exists()


def test_resume_without_a_checkpoint_path_is_a_clear_error():
    with pytest.raises(TrainerError, match="resume: this run has no checkpoint path"):
        LocalTrainer.from_manifest(tiny()).train(verbose=False, resume=True)


def test_the_evolved_manifest_names_no_output_location(tmp_path, capsys):
    out = tmp_path / "run"
    checkpoint = tmp_path / "elsewhere" / "ck.pt"
    args = ["--out", str(out), "--checkpoint-path", str(checkpoint), "--quiet"]
    assert main(["train", CONFIG, *CLI_SMALL, *args]) == 0
    evolved = load_manifest(out / "manifest.yaml")
    assert evolved.training.checkpoint_path is None
    assert evolved.training.max_steps == 100  # the budget and settings stay
    # Training the evolved manifest again writes its own run, not the first one's.
    saved = checkpoint.read_bytes()
    again = tmp_path / "again"
    assert main(["train", str(out / "manifest.yaml"), "--out", str(again), "--quiet"]) == 0
    assert checkpoint.read_bytes() == saved and (again / "checkpoint.pt").exists()


def test_quiet_prints_one_line_with_the_outputs_location(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", CONFIG, *CLI_SMALL, "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    (line,) = captured.out.splitlines()
    assert line.startswith(f"outputs in {out}/ (best agent: best ever ")
    assert "generation 0" not in captured.err  # no summaries


# --- the best agent ever evaluated ------------------------------------------------------


def test_best_agent_is_the_best_ever_evaluated_and_every_line_agrees(tmp_path, scripted, capsys):
    # generation 0: agents score 50 and 10; generation 1 (after mutation): 30 and 20
    scripted([50, 10, 30, 20])
    trainer = LocalTrainer.from_manifest(tiny())
    trainer.train(verbose=True, output_dir=tmp_path)
    captured = capsys.readouterr()
    assert trainer.state.best == {"fitness": 50.0, "generation": 0, "index": 0}
    saved = RLAlgorithm.load(tmp_path / "best_agent.pt")
    assert saved.fitness[-1] == 50.0  # not the final population's best (30)
    assert "best ever 50.0 (agent 0, generation 0)" in captured.out  # the outputs listing
    assert "best ever 50.0 (agent 0, generation 0)" in captured.err.splitlines()[-1]  # closing
    assert "best of generation 30.0" in captured.err  # each summary says which is which
    # The saved agent is the elite as evaluated: later mutation did not touch it.
    for name, weight in saved.actor.state_dict().items():
        assert torch.equal(weight, trainer.state.elite.actor.state_dict()[name])
    mutated = trainer.population[0].actor.state_dict()  # the elite's slot, trained further
    assert any(not torch.equal(w, mutated[n]) for n, w in saved.actor.state_dict().items())


def test_the_progress_bar_shows_the_best_ever_and_ends_full(scripted, monkeypatch):
    shown = []
    real_update = Progress.update

    def update(self, steps, rate, best, generation):
        shown.append(best)
        real_update(self, steps, rate, best, generation)

    monkeypatch.setattr(Progress, "update", update)
    scripted([50, 10, 30, 20])
    LocalTrainer.from_manifest(tiny()).train(verbose=False)
    assert shown == [50.0, 50.0, 50.0, 50.0]  # never the latest agent's 10, 30 or 20


def test_progress_counts_the_budget_never_more(capsys):
    bar = Progress(total=100, initial=0, verbose=True, desc="x")
    bar.update(60, 1000.0, 1.0, 0)
    bar.update(60, 1000.0, 1.0, 0)  # a rollout overshooting the budget
    assert bar.bar.n == 100
    bar = Progress(total=100, initial=0, verbose=True, desc="x")
    bar.update(99, 1000.0, 1.0, 0)
    bar.close(done=True)
    assert bar.bar.n == 100
    assert "100%" in capsys.readouterr().err


def test_the_final_population_is_saved_in_one_file(tmp_path):
    trainer = LocalTrainer.from_manifest(tiny())
    trainer.train(verbose=False, output_dir=tmp_path)
    population = load_population(tmp_path / "population.pt")
    assert [a.index for a in population] == [a.index for a in trainer.population]
    assert [a.fitness for a in population] == [a.fitness for a in trainer.population]
    assert all(isinstance(a, DQN) for a in population)


def test_a_damaged_population_file_is_refused_by_key(tmp_path):
    trainer = LocalTrainer.from_manifest(tiny())
    trainer.train(verbose=False, output_dir=tmp_path)
    data = load(tmp_path / "population.pt")
    data["agents"][1]["class"] = "os.system"
    save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=r"agents\[1\]\.class: a 'os.system' agent"):
        load_population(tmp_path / "bad.pt")


def test_a_resumed_run_keeps_the_elite_of_its_first_part(tmp_path, scripted):
    scripted([50, 10, 30, 20, 40, 45])
    first = LocalTrainer.from_manifest(tiny(max_steps=100))
    first.train(verbose=False, output_dir=tmp_path)
    assert load_run(tmp_path / "checkpoint.pt")["state"]["best"]["fitness"] == 50.0
    resumed = LocalTrainer.from_manifest(tiny(max_steps=300))
    resumed.train(verbose=False, output_dir=tmp_path, resume=True)
    assert resumed.state.best == {"fitness": 50.0, "generation": 0, "index": 0}
    assert RLAlgorithm.load(tmp_path / "best_agent.pt").fitness[-1] == 50.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("elite"), "elite: missing"),
        (lambda d: d["state"].update(best=None), "elite: holds an agent, but state.best"),
        (lambda d: d["state"]["best"].pop("generation"), "state.best.generation: missing"),
    ],
)
def test_the_run_checkpoint_checks_its_elite(tmp_path, change, message):
    trainer = LocalTrainer.from_manifest(tiny(max_steps=100))
    trainer.train(verbose=False, checkpoint_path=tmp_path / "run.pt")
    data = load(tmp_path / "run.pt")
    change(data)
    save(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=re.escape(message)):
        LocalTrainer.from_manifest(tiny(), resume_from_checkpoint=tmp_path / "bad.pt").train(
            verbose=False
        )


# --- resuming a finished run ------------------------------------------------------------


def test_resuming_a_run_stopped_on_its_target_with_the_target_removed_goes_on(tmp_path):
    first = LocalTrainer.from_manifest(tiny(target_score=0.0))
    first.train(verbose=False, output_dir=tmp_path)
    assert first.state.finished == "target_score" and len(first.state.history) == 1
    resumed = LocalTrainer.from_manifest(tiny(target_score=None, max_steps=300))
    resumed.train(verbose=False, output_dir=tmp_path, resume=True)
    assert resumed.state.finished == "max_steps"
    assert [r["generation"] for r in resumed.state.history] == [0, 1, 2]


def test_resuming_a_finished_run_unchanged_says_how_to_continue(tmp_path, capsys):
    out = tmp_path / "run"
    command = ["train", CONFIG, *CLI_SMALL, "--set", "training.target_score=0", "--out", str(out)]
    assert main([*command, "--quiet"]) == 0
    capsys.readouterr()
    # a raised budget alone: the target is still reached, so the run stays finished
    assert main([*command, "--set", "training.max_steps=300", "--resume"]) == 0
    err = capsys.readouterr().err
    assert "the resumed run had already finished (target_score)" in err
    assert "raise or remove target_score" in err
    assert len(json.loads((out / "history.json").read_text())) == 1
    # the target removed on the command line: it goes on to the raised budget
    assert main([*command, "--set", "training.target_score=null", "--set",
                 "training.max_steps=300", "--resume", "--quiet"]) == 0  # fmt: skip
    assert len(json.loads((out / "history.json").read_text())) == 3


# --- threads (the rule itself: tests/training/test_threads.py) ---------------------------


@pytest.fixture
def no_thread_settings(monkeypatch):
    monkeypatch.delenv(thread_rule.ENV_VAR, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


@pytest.mark.slow
def test_a_run_sets_its_threads_and_puts_them_back(no_thread_settings):
    torch.set_num_threads(2)
    trainer = LocalTrainer.from_manifest(tiny(max_steps=100))
    trainer.train(verbose=False)
    assert trainer.threads == 1
    assert torch.get_num_threads() == 2
    trainer = LocalTrainer.from_manifest(tiny(max_steps=100), num_threads=2)
    trainer.train(verbose=False)
    assert trainer.threads == 2


def test_a_seed_trains_the_same_agents_whatever_threads_torch_had(no_thread_settings):
    # 128-wide layers: torch's orthogonal init (a QR) rounds differently on 2 threads
    # there, so building the agents outside single_thread() makes the runs differ.
    document = tiny(max_steps=100)
    document["network"] = NET_128  # each run below takes its own deep copy
    weights = []
    for threads in (2, 1):
        torch.set_num_threads(threads)
        trainer = LocalTrainer.from_manifest(copy.deepcopy(document))
        trainer.train(verbose=False)
        weights.append([agent.actor.state_dict() for agent in trainer.population])
    for ours, theirs in zip(*weights, strict=True):
        assert all(torch.equal(ours[key], theirs[key]) for key in ours)


def test_cli_threads_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["train", CONFIG, "--threads", "0"])
    assert "--threads: '0' is not a positive integer" in capsys.readouterr().err
