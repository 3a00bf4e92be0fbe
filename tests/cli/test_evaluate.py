"""``agilerl evaluate`` (agilerl/cli/evaluate.py): the agent file's environment, --env,
--manifest, JSON that matches the Python function, videos, one-line errors; and every
command ending quietly when its reader closes early. ``evaluate_agent`` itself:
tests/test_evaluation.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from PIL import Image
from support import ROOT
from support.agent_files import save_agent_file, small_agent

from agilerl.algorithms import RLAlgorithm
from agilerl.cli import main
from agilerl.evaluation import evaluate_agent


@pytest.fixture
def agent_file(tmp_path):
    return save_agent_file(tmp_path)


def test_cli_uses_the_environment_the_agent_file_records(agent_file, capsys):
    assert main(["evaluate", str(agent_file), "--episodes", "3"]) == 0
    out, err = capsys.readouterr()
    assert f"evaluating {agent_file} (PPO) on CartPole-v1" in err
    assert "CartPole-v1: 3 episodes, seeds 0..2, deterministic actions" in out
    assert "return " in out and "+/-" in out and "length " in out


def test_cli_json_matches_the_python_function(agent_file, capsys):
    args = ["evaluate", str(agent_file), "--episodes", "3", "--seed", "5", "--stochastic"]
    assert main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    expected = evaluate_agent(RLAlgorithm.load(agent_file), "CartPole-v1", 3, 5, False)
    assert report["returns"] == expected.returns and report["mean_return"] == expected.mean_return
    assert report["agent"] == str(agent_file) and report["deterministic"] is False


@pytest.mark.parametrize("command", [["evaluate", "AGENT", "--format", "json"], ["schema"]])
def test_a_reader_that_closes_early_ends_the_command_quietly(agent_file, command):
    """``agilerl evaluate ... --format json | head``: the reader gone, the command ends with
    the status of a process killed by SIGPIPE (141), without a BrokenPipeError traceback,
    whichever command it is (main() catches it for all)."""
    from agilerl.cli import EXIT_STDOUT_CLOSED

    argv = [str(agent_file) if word == "AGENT" else word for word in command]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agilerl", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    proc.stdout.close()  # the reader closes before the command writes a byte
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_STDOUT_CLOSED, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_cli_writes_a_video(agent_file, tmp_path, capsys):
    video = tmp_path / "first.gif"
    assert main(["evaluate", str(agent_file), "--episodes", "1", "--video", str(video)]) == 0
    assert f"video   {video}" in capsys.readouterr().out
    with Image.open(video) as gif:
        assert gif.n_frames > 1


def test_cli_takes_the_environment_from_a_manifest_and_lists_its_code(tmp_path, capsys):
    (tmp_path / "envs.py").write_text(
        "import sys\n"
        "import gymnasium as gym\n"
        "print('envs.py imported', file=sys.stderr)\n"
        "def make(length):\n"
        "    return gym.wrappers.TimeLimit(gym.make('CartPole-v1').unwrapped, length)\n"
    )
    manifest = tmp_path / "short.yaml"
    manifest.write_text(
        "version: 1\nalgorithm: {name: PPO}\n"
        f"environment: {{name: short, entrypoint: 'envs.py:make', path: '{tmp_path}', "
        "config: {length: 4}}\n"
    )
    path = tmp_path / "agent.pt"
    small_agent().save_checkpoint(path)  # records no environment: the manifest gives it
    assert main(["evaluate", str(path), "--manifest", str(manifest), "--episodes", "2"]) == 0
    out, err = capsys.readouterr()
    assert f"code: environment.entrypoint -> envs.py:make (file {tmp_path / 'envs.py'}" in err
    assert err.index("code: environment.entrypoint") < err.index("envs.py imported")
    assert "length  4.0 +/- 0.0" in out


def _error(capsys, *args):
    assert main(["evaluate", *args]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("agilerl:")]
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_cli_errors_are_one_line(agent_file, tmp_path, capsys):
    bare = tmp_path / "bare.pt"
    small_agent().save_checkpoint(bare)
    assert "records no environment" in _error(capsys, str(bare))
    assert "--env ID or --manifest FILE" in _error(capsys, str(bare))
    assert "no such checkpoint file" in _error(capsys, str(tmp_path / "missing.pt"))
    assert (
        "'CartPol-v1' is not a registered Gymnasium environment (did you mean 'CartPole-v1'?)"
        in _error(capsys, str(agent_file), "--env", "CartPol-v1")
    )
    assert "the agent's observation space" in _error(capsys, str(agent_file), "--env", "Acrobot-v1")
    assert "episodes: expected a positive number" in _error(
        capsys, str(agent_file), "--episodes", "0"
    )
    assert "unknown video format" in _error(capsys, str(agent_file), "--video", "x.webm")
    if not torch.cuda.is_available():
        assert "--device cuda:7: CUDA is not" in _error(
            capsys, str(agent_file), "--device", "cuda:7"
        )


def test_train_then_evaluate_the_best_agent(tmp_path, capsys):
    out = tmp_path / "run"
    small = [
        "--set", "training.max_steps=200", "--set", "training.evo_steps=100",
        "--set", "training.pop_size=2", "--set", "training.eval_steps=20",
        "--set", "environment.num_envs=2", "--set", "environment.sync=true",
        "--set", "replay_buffer.max_size=500",
    ]  # fmt: skip
    assert (
        main(["train", str(ROOT / "configs/dqn.yaml"), *small, "--out", str(out), "--quiet"]) == 0
    )
    capsys.readouterr()
    assert RLAlgorithm.load(out / "best_agent.pt").environment["name"] == "CartPole-v1"
    assert main(["evaluate", str(out / "best_agent.pt"), "--episodes", "2"]) == 0
    assert "CartPole-v1: 2 episodes" in capsys.readouterr().out
