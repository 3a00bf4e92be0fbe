"""Evaluation (agilerl/evaluation.py): ``evaluate_agent`` (seeded episodes, spaces
checked, videos read back) and the environment an agent file records. The command,
``agilerl evaluate``: tests/cli/test_evaluate.py."""

from __future__ import annotations

import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image
from support.agent_files import NET, save_agent_file, small_agent

from agilerl.algorithms import DQN, PPO, RLAlgorithm
from agilerl.evaluation import EvaluationError, evaluate_agent
from agilerl.families.environments import EnvironmentSpecError
from agilerl.files.checkpoints import CheckpointError
from agilerl.models.env import GymEnvSpec


@pytest.fixture
def agent_file(tmp_path):
    return save_agent_file(tmp_path)


# -- evaluate_agent ---------------------------------------------------------------------------
def test_returns_and_lengths_of_seeded_episodes():
    result = evaluate_agent(small_agent(), "CartPole-v1", episodes=4, seed=3)
    assert len(result.returns) == len(result.lengths) == 4
    assert result.returns == [float(n) for n in result.lengths]  # CartPole pays 1 a step
    assert result.mean_return == pytest.approx(np.mean(result.returns))
    assert result.std_return == pytest.approx(np.std(result.returns))
    assert result.to_json()["mean_length"] == pytest.approx(np.mean(result.lengths))
    again = evaluate_agent(small_agent(), "CartPole-v1", episodes=4, seed=3)
    assert again.returns == result.returns
    # Episode i is reset with seed S+i: the run from seed 4 is the last three of these.
    assert (
        evaluate_agent(small_agent(), "CartPole-v1", episodes=3, seed=4).returns
        == result.returns[1:]
    )


@pytest.mark.parametrize("cls", [DQN, PPO])
def test_sampled_actions_are_reproducible_and_leave_the_agent_rng_alone(cls):
    agent = small_agent(cls)
    before, torch_before = agent.rng.bit_generator.state, torch.get_rng_state()
    first = evaluate_agent(agent, "CartPole-v1", episodes=3, seed=1, deterministic=False)
    second = evaluate_agent(agent, "CartPole-v1", episodes=3, seed=1, deterministic=False)
    assert first.returns == second.returns and not first.deterministic
    assert agent.rng.bit_generator.state == before
    assert torch.equal(torch.get_rng_state(), torch_before)


def test_box_actions_and_an_episode_cap():
    result = evaluate_agent(small_agent(PPO, "Pendulum-v1"), "Pendulum-v1", 2, max_episode_steps=15)
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
    result = evaluate_agent(small_agent(), GymEnvSpec.model_validate(spec), episodes=2)
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
        evaluate_agent(small_agent(), spec, episodes=1, video=tmp_path / "out.gif")
    assert evaluate_agent(small_agent(), spec, episodes=1).lengths  # without a video it runs


@pytest.mark.parametrize(
    ("env_id", "message"),
    [
        ("Acrobot-v1", r"Acrobot-v1: the agent's observation space Box\(.*\(4,\).*\) is not the environment's Box\(.*\(6,\)"),
        ("MountainCar-v0", r"MountainCar-v0: the agent's observation space"),
    ],
)  # fmt: skip
def test_an_agent_of_other_spaces_is_a_clear_error(env_id, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate_agent(small_agent(), env_id, episodes=1)


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
        evaluate_agent(small_agent(), "CartPole-v1", **kwargs)


def test_gif_of_the_first_episode(tmp_path):
    path = tmp_path / "episode.gif"
    result = evaluate_agent(small_agent(), "CartPole-v1", episodes=2, video=path)
    assert result.frames == result.lengths[0] + 1  # the reset frame and one per step
    with Image.open(path) as gif:
        assert gif.format == "GIF" and gif.size == (600, 400)
        assert gif.n_frames > 1
    assert result.video == path


def test_mp4_of_the_first_episode(tmp_path):
    import imageio_ffmpeg  # the video extra (in the dev extra)

    path = tmp_path / "episode.mp4"
    result = evaluate_agent(small_agent(), "CartPole-v1", episodes=1, video=path)
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
        evaluate_agent(small_agent(), "CartPole-v1", episodes=1, video=tmp_path / "out.mp4")
    assert not (tmp_path / "out.mp4").exists()


# -- the environment an agent file records ----------------------------------------------------
def test_agent_files_keep_their_environment(tmp_path, agent_file):
    agent = RLAlgorithm.load(agent_file)
    assert agent.environment == {"name": "CartPole-v1"}
    assert agent.clone().environment == {"name": "CartPole-v1"}
    bare = small_agent()
    bare.save_checkpoint(tmp_path / "bare.pt")
    assert RLAlgorithm.load(tmp_path / "bare.pt").environment is None  # older files: none


def test_a_malformed_environment_record_is_refused():
    state = small_agent().state_dict()
    state["environment"] = ["CartPole-v1"]
    with pytest.raises(CheckpointError, match="environment: expected a mapping"):
        PPO.from_state_dict(state)
