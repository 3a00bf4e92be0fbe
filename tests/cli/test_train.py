"""``agilerl train``: overrides, clear errors, progress output, outputs, kill and resume."""

import json
import os
import re
import shutil
import subprocess
import sys
import warnings

import pytest
import torch
from support import ROOT
from support.killed_runs import kill_at_first_checkpoint

from agilerl.cli import main
from agilerl.guards.user_code import UserCodeWarning
from agilerl.models.manifest import load_manifest

SMALL = [
    "--set", "training.max_steps=400",
    "--set", "training.evo_steps=200",
    "--set", "training.pop_size=2",
    "--set", "training.eval_steps=30",
    "--set", "environment.num_envs=2",
    "--set", "environment.sync=true",
    "--set", "replay_buffer.max_size=2000",
]  # fmt: skip


def test_train_with_overrides_shows_progress_and_writes_outputs(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", str(ROOT / "configs/dqn.yaml"), *SMALL, "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "generation 0" in captured.err and "generation 1" in captured.err  # summaries
    assert "mutation" in captured.err and "fitness" in captured.err
    assert "env steps/s" in captured.err  # the progress bar's one rate
    assert not re.search(r"\dk?steps?/s", captured.err)  # not tqdm's own, of budget steps
    assert "100%" in captured.err  # the bar ends full when the budget is used
    assert "finished (step budget used) after 2 generations" in captured.err
    assert (out / "fitness.png").read_bytes()[:4] == b"\x89PNG"
    final = load_manifest(out / "manifest.yaml")
    assert final.training.max_steps == 400 and final.training.pop_size == 2  # overrides kept
    assert len(json.loads((out / "history.json").read_text())) == 2
    assert (out / "best_agent.pt").exists() and (out / "checkpoint.pt").exists()


def test_quiet_prints_the_one_line_the_readme_promises(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["train", str(ROOT / "configs/dqn.yaml"), *SMALL, "--out", str(out), "--quiet"]) == 0
    )
    captured = capsys.readouterr()
    lines = (captured.out + captured.err).splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"outputs in {out}/ (best agent: best ever ")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("training.max_steps=abc", "--set training.max_steps=abc: training.max_steps: Input should be a valid integer"),
        ("training.max_step=10", "--set training.max_step=10: training.max_step: unknown key (did you mean 'max_steps'?)"),
        ("training.max_steps", "--set training.max_steps: expected KEY=VALUE"),
        ("training.max_steps.deep=1", "--set training.max_steps.deep=1: training.max_steps is not a section"),
        ("training.pop_size=0", "--set training.pop_size=0: training.pop_size: Input should be greater than or equal to 1"),
        # Sections the --set brings into the document are blamed on it, not on a line.
        ("training.foo.bar=1", "--set training.foo.bar=1: training.foo: unknown key"),
        ("a.b.c.d.e=1", "--set a.b.c.d.e=1: a: unknown key"),
        ("environment.wrappers=[{wraper: a.b}]", "--set environment.wrappers=[{wraper: a.b}]: environment.wrappers[0].wraper: unknown key (did you mean 'wrapper'?"),
    ],
)  # fmt: skip
def test_bad_override_is_a_clear_error_without_traceback(override, message, capsys):
    rc = main(["train", str(ROOT / "configs/dqn.yaml"), "--set", override])
    err = capsys.readouterr().err
    assert rc == 1
    assert message in err
    assert "Traceback" not in err


def test_errors_in_the_file_still_name_file_line_and_column(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "configs/dqn.yaml").read_text().replace("gamma: 0.99", "gamma: 2"))
    assert main(["train", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:7:" in err and "algorithm.gamma" in err


def test_missing_resume_checkpoint_is_clear(tmp_path, capsys):
    config = str(ROOT / "configs/dqn.yaml")
    assert main(["train", config, "--out", str(tmp_path), "--resume"]) == 1
    assert f"{tmp_path / 'checkpoint.pt'}: no such checkpoint file" in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_unavailable_device_is_clear(capsys):
    assert main(["train", str(ROOT / "configs/dqn.yaml"), "--device", "cuda"]) == 1
    assert "--device cuda: CUDA is not available on this machine" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_run_resumes_and_completes(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "agilerl.cli", "train", str(ROOT / "configs/dqn.yaml"),
        *SMALL, "--set", "training.max_steps=1200", "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    checkpoint = out / "checkpoint.pt"
    kill_at_first_checkpoint(command, checkpoint, env)
    resumed = subprocess.run(
        [*command, "--resume"], env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resuming from" in resumed.stderr
    history = json.loads((out / "history.json").read_text())
    assert [r["generation"] for r in history] == list(range(6))  # no generation lost or redone
    assert history[-1]["steps"] == 1200


def test_the_interrupt_hint_resumes_the_same_run(tmp_path, capsys, monkeypatch):
    """Following the Ctrl-C hint must continue this run, not start another: every --set
    (a budget, a population) and every option that shapes the run is repeated."""
    import shlex

    from agilerl.cli import build_parser
    from agilerl.trainer import LocalTrainer

    def interrupted(self, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalTrainer, "train", interrupted)
    argv = [
        "train", str(ROOT / "configs/dqn.yaml"), *SMALL, "--set", "training.max_steps=20480",
        "--out", str(tmp_path / "a run"), "--checkpoint-steps", "400", "--threads", "1",
        "--tensorboard", str(tmp_path / "tb"), "--quiet", "--force",
    ]  # fmt: skip
    assert main(argv) == 130
    hint = capsys.readouterr().err.strip().splitlines()[-1]
    command = hint.split("continue with: ", 1)[1]
    words = shlex.split(command)
    assert words[:2] == ["agilerl", "train"] and words[-1] == "--resume"
    given, resumed = build_parser().parse_args(argv), build_parser().parse_args(words[1:])
    assert resumed.resume is True and resumed.force is False  # --force would delete the run
    for name, value in vars(given).items():
        if name not in ("resume", "force", "handler"):
            assert getattr(resumed, name) == value, name


def test_an_entry_point_file_is_found_beside_the_manifest_from_any_directory(
    tmp_path, monkeypatch, capsys
):
    custom = tmp_path / "project" / "custom"
    shutil.copytree(ROOT / "examples/corridor", custom)
    monkeypatch.chdir(tmp_path / "project")  # as `agilerl train custom/corridor.yaml`
    out = tmp_path / "run"
    small = [*SMALL, "--set", "training.pop_size=1"]
    assert main(["train", "custom/corridor.yaml", *small, "--out", str(out), "--quiet"]) == 0
    # recorded absolute: the manifest the run writes lies in the run's folder, not beside
    # the code, and a relative folder would be looked up from there
    written = load_manifest(out / "manifest.yaml")
    assert written.environment.path == str(custom.resolve())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    agent = str(out / "best_agent.pt")
    assert main(["evaluate", agent, "--episodes", "2", "--trust-agent-code"]) == 0
    assert "corridor.py:make: 2 episodes" in capsys.readouterr().out
    again = ["train", str(out / "manifest.yaml"), "--out", str(tmp_path / "again"), "--quiet"]
    assert main(again) == 0  # the written manifest runs from anywhere too


def test_a_checker_warning_is_one_agilerl_line(tmp_path, monkeypatch, capsys):
    shutil.copy(ROOT / "examples/corridor/corridor.py", tmp_path)
    (tmp_path / "old.py").write_text(
        "from corridor import Corridor\n\n\n"
        "class OldSeed(Corridor):\n"
        "    def seed(self, seed=None):\n"
        "        return [seed]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    manifest = tmp_path / "old.yaml"
    manifest.write_text(
        (ROOT / "examples/corridor/corridor.yaml")
        .read_text()
        .replace("corridor.py:make", "old.py:OldSeed")
        .replace("config: {length: 5}", "config: {}")
    )
    small = [*SMALL, "--set", "training.pop_size=1"]
    with pytest.warns(UserCodeWarning) as caught:
        assert main(["train", str(manifest), *small, "--out", str(tmp_path / "run")]) == 0
    found = {str(w.message) for w in caught if w.category is UserCodeWarning}
    message = (
        "environment.entrypoint old.py:OldSeed: Official support for the `seed` function is "
        "dropped. Standard practice is to reset gymnasium environments using "
        "`env.reset(seed=<desired seed>)`"
    )
    assert found == {message}
    # as the command prints it (pytest holds warnings back from stderr): one line
    shown = warnings.formatwarning(message, UserCodeWarning, "preflight.py", 59)
    assert shown == f"agilerl: warning: {message}\n"
