"""Evaluation: ``evaluate_agent`` (seeded episodes, spaces checked, videos read back) and
``agilerl evaluate`` (the agent file's environment, --env, --manifest, JSON, one-line errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image
from support import ROOT

from agilerl.algorithms import DQN, PPO, RLAlgorithm
from agilerl.cli import main
from agilerl.evaluation import EvaluationError, evaluate_agent
from agilerl.families.environments import EnvironmentSpecError
from agilerl.files.checkpoints import CheckpointError
from agilerl.models.env import GymEnvSpec

NET = {"encoder_config": {"hidden_size": [16]}, "head_config": {"hidden_size": [16]}}


def _agent(cls=PPO, env_id="CartPole-v1", seed=0):
    env = gym.make(env_id)
    torch.manual_seed(seed)
    agent = cls(env.observation_space, env.action_space, net_config=NET, seed=seed)
    env.close()
    return agent


@pytest.fixture
def agent_file(tmp_path):
    """A CartPole PPO agent file that records its environment, as agilerl train writes."""
    agent = _agent()
    agent.environment = {"name": "CartPole-v1"}
    path = tmp_path / "agent.pt"
    agent.save_checkpoint(path)
    return path


# -- evaluate_agent ---------------------------------------------------------------------------
def test_returns_and_lengths_of_seeded_episodes():
    result = evaluate_agent(_agent(), "CartPole-v1", episodes=4, seed=3)
    assert len(result.returns) == len(result.lengths) == 4
    assert result.returns == [float(n) for n in result.lengths]  # CartPole pays 1 a step
    assert result.mean_return == pytest.approx(np.mean(result.returns))
    assert result.std_return == pytest.approx(np.std(result.returns))
    assert result.to_json()["mean_length"] == pytest.approx(np.mean(result.lengths))
    again = evaluate_agent(_agent(), "CartPole-v1", episodes=4, seed=3)
    assert again.returns == result.returns
    # Episode i is reset with seed S+i: the run from seed 4 is the last three of these.
    assert evaluate_agent(_agent(), "CartPole-v1", episodes=3, seed=4).returns == result.returns[1:]


@pytest.mark.parametrize("cls", [DQN, PPO])
def test_sampled_actions_are_reproducible_and_leave_the_agent_rng_alone(cls):
    agent = _agent(cls)
    before, torch_before = agent.rng.bit_generator.state, torch.get_rng_state()
    first = evaluate_agent(agent, "CartPole-v1", episodes=3, seed=1, deterministic=False)
    second = evaluate_agent(agent, "CartPole-v1", episodes=3, seed=1, deterministic=False)
    assert first.returns == second.returns and not first.deterministic
    assert agent.rng.bit_generator.state == before
    assert torch.equal(torch.get_rng_state(), torch_before)


def test_box_actions_and_an_episode_cap():
    result = evaluate_agent(_agent(PPO, "Pendulum-v1"), "Pendulum-v1", 2, max_episode_steps=15)
    assert result.lengths == [15, 15] and all(r < 0 for r in result.returns)


def test_an_environment_spec_with_entry_point_config_and_wrappers(tmp_path):
    (tmp_path / "envs.py").write_text(
        "import gymnasium as gym\n"
        "def make(length):\n"
        "    return gym.wrappers.TimeLimit(gym.make('CartPole-v1').unwrapped, length)\n"
    )
    spec = {
        "name": "short-cartpole",
        "entrypoint": "envs.py:make",
        "path": str(tmp_path),
        "config": {"length": 3},
        "wrappers": ["gymnasium.wrappers.RecordEpisodeStatistics"],
    }
    result = evaluate_agent(_agent(), GymEnvSpec.model_validate(spec), episodes=2)
    assert result.lengths == [3, 3] and result.environment == "envs.py:make"


def test_a_video_of_an_environment_that_cannot_render_says_why(tmp_path):
    (tmp_path / "envs.py").write_text(
        "import gymnasium as gym\ndef make():\n    return gym.make('CartPole-v1')\n"
    )
    spec = GymEnvSpec(name="plain", entrypoint="envs.py:make", path=str(tmp_path))
    with pytest.raises(
        EnvironmentSpecError,
        match=r"unexpected keyword argument 'render_mode'.*\(for the video: made with render_mode='rgb_array'\)",
    ):
        evaluate_agent(_agent(), spec, episodes=1, video=tmp_path / "out.gif")
    assert evaluate_agent(_agent(), spec, episodes=1).lengths  # without a video it runs


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("Acrobot-v1", r"Acrobot-v1: the agent's observation space Box\(.*\(4,\).*\) is not the environment's Box\(.*\(6,\)"),
        ("MountainCar-v0", r"MountainCar-v0: the agent's observation space"),
    ],
)  # fmt: skip
def test_an_agent_of_other_spaces_is_a_clear_error(env_id, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate_agent(_agent(), env_id, episodes=1)


def test_an_action_space_mismatch_is_named():
    env = gym.make("CartPole-v1")
    agent = PPO(env.observation_space, gym.spaces.Discrete(3), net_config=NET)
    with pytest.raises(
        EvaluationError, match=r"action space Discrete\(3\) is not the .* Discrete\(2\)"
    ):
        evaluate_agent(agent, "CartPole-v1", episodes=1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"episodes": 0}, "episodes: expected a positive number, got 0"),
        ({"max_episode_steps": 0}, "max_episode_steps: expected a positive number, got 0"),
        ({"video": "out.avi"}, r"video: out.avi: unknown video format; use one of .gif, .mp4"),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate_agent(_agent(), "CartPole-v1", **kwargs)


def test_gif_of_the_first_episode(tmp_path):
    path = tmp_path / "episode.gif"
    result = evaluate_agent(_agent(), "CartPole-v1", episodes=2, video=path)
    assert result.frames == result.lengths[0] + 1  # the reset frame and one per step
    with Image.open(path) as gif:
        assert gif.format == "GIF" and gif.size == (600, 400)
        assert gif.n_frames > 1
    assert result.video == path


def test_mp4_of_the_first_episode(tmp_path):
    import imageio_ffmpeg  # the video extra (in the dev extra)

    path = tmp_path / "episode.mp4"
    result = evaluate_agent(_agent(), "CartPole-v1", episodes=1, video=path)
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = reader.__next__()
    frames = sum(1 for _ in reader)
    assert meta["size"] == (600, 400)
    assert frames == result.frames > 1


def test_mp4_without_the_video_extra_names_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # import fails as if absent
    with pytest.raises(
        EvaluationError, match=r"needs the video extra \(pip install 'agilespec\[video\]'"
    ):
        evaluate_agent(_agent(), "CartPole-v1", episodes=1, video=tmp_path / "out.mp4")
    assert not (tmp_path / "out.mp4").exists()


# -- the environment an agent file records ----------------------------------------------------
def test_agent_files_keep_their_environment(tmp_path, agent_file):
    agent = RLAlgorithm.load(agent_file)
    assert agent.environment == {"name": "CartPole-v1"}
    assert agent.clone().environment == {"name": "CartPole-v1"}
    bare = _agent()
    bare.save_checkpoint(tmp_path / "bare.pt")
    assert RLAlgorithm.load(tmp_path / "bare.pt").environment is None  # older files: none


def test_a_malformed_environment_record_is_refused():
    state = _agent().state_dict()
    state["environment"] = ["CartPole-v1"]
    with pytest.raises(CheckpointError, match="environment: expected a mapping"):
        PPO.from_state_dict(state)


# -- agilerl evaluate -------------------------------------------------------------------------
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
    _agent().save_checkpoint(path)  # records no environment: the manifest gives it
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
    _agent().save_checkpoint(bare)
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
