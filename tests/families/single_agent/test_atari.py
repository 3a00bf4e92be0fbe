"""Atari from the manifest: ALE ids registered on demand (the atari extra, which CI
installs), environment.atari's preprocessing and frame stack, the CNN on stacked frames,
and `agilerl init` writing an image network that trains."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from gymnasium.wrappers import AtariPreprocessing, ClipReward, FrameStackObservation
from support import ROOT

from agilerl.cli import main
from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.atari import EpisodicLife, FireReset, scoring_spec
from agilerl.families.single_agent.cohort_envs import CohortEnvs
from agilerl.families.single_agent.envs import image_observations, make_env, make_vector_env
from agilerl.families.single_agent.evaluation import run_episodes
from agilerl.families.single_agent.scoring import Scoring
from agilerl.models import QNetworkSpec
from agilerl.models.env import GymEnvSpec
from agilerl.models.manifest import load_manifest
from agilerl.networks.base import infer_encoder_spec, preprocess
from agilerl.networks.networks import QNetwork

pytest.importorskip("ale_py", reason="the atari extra (CI installs it)")
pytest.importorskip("cv2", reason="the atari extra brings OpenCV")

STACKED = spaces.Box(0, 255, (4, 84, 84), np.uint8)


def test_an_ale_id_is_made_without_naming_ale_py():
    env = make_env(GymEnvSpec(name="ALE/Pong-v5"))
    try:
        assert env.observation_space.shape == (3, 210, 160)  # the raw screen, channels first
    finally:
        env.close()


def _chain(env) -> list[type]:
    chain = []
    while hasattr(env, "env"):
        chain.append(type(env))
        env = env.env
    return chain


def test_preprocessing_gives_stacked_84x84_uint8_frames_with_the_usual_wrappers():
    spec = GymEnvSpec(name="ALE/Breakout-v5", atari={}, num_envs=2, vectorize="sync")
    env = make_env(spec)
    try:
        assert env.observation_space == STACKED
        chain = _chain(env)  # outermost first: the UserEnv guard, then the block's wrappers
        assert chain[1:6] == [FrameStackObservation, ClipReward, FireReset, EpisodicLife,
                              AtariPreprocessing]  # fmt: skip
        # the game itself does not skip frames (AtariPreprocessing does)
        assert env.unwrapped._frameskip == 1
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    finally:
        env.close()
    vector = make_vector_env(spec)
    try:
        obs, _ = vector.reset(seed=0)
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
    finally:
        vector.close()


def test_choices_are_honoured_and_fire_reset_only_where_the_game_has_fire():
    atari = {"screen_size": 64, "grayscale": True, "frame_stack": 2, "episodic_life": False,
             "clip_reward": False}  # fmt: skip
    env = make_env(GymEnvSpec(name="ALE/Pong-v5", atari=atari))
    try:
        assert env.observation_space.shape == (2, 64, 64)
        chain = _chain(env)
        assert EpisodicLife not in chain and ClipReward not in chain and FireReset in chain
    finally:
        env.close()
    freeway = make_env(GymEnvSpec(name="ALE/Freeway-v5", atari={}))  # no FIRE action
    try:
        assert FireReset not in _chain(freeway)
    finally:
        freeway.close()


def test_a_lost_life_ends_the_episode_and_the_reset_continues_the_game():
    env = make_env(GymEnvSpec(name="ALE/Breakout-v5", atari={"noop_max": 0}))
    try:
        env.reset(seed=1)
        ale = env.unwrapped.ale
        assert ale.lives() == 5
        rng = np.random.default_rng(0)
        for _ in range(2000):
            _, reward, terminated, truncated, _ = env.step(int(rng.integers(4)))
            assert reward in (0.0, 1.0)  # clipped
            if terminated or truncated:
                break
        assert terminated and ale.lives() == 4  # one life lost, not the game
        env.reset()
        assert ale.lives() == 4  # the same game goes on
    finally:
        env.close()


def test_a_game_that_skips_frames_itself_is_refused_naming_the_field():
    spec = GymEnvSpec(name="ALE/Pong-v5", atari={}, config={"frameskip": 4})
    with pytest.raises(EnvironmentSpecError, match=r"environment\.config\.frameskip: 4"):
        make_env(spec)
    with pytest.raises(EnvironmentSpecError, match=r"environment\.atari: cannot preprocess"):
        make_env(GymEnvSpec(name="CartPole-v1", atari={}))


def test_the_cnn_takes_stacked_byte_frames_scaled_to_one():
    encoder = infer_encoder_spec(STACKED)
    assert encoder.arch == "cnn"
    frames = np.full((2, 4, 84, 84), 255, dtype=np.uint8)
    assert torch.equal(preprocess(frames, STACKED), torch.ones(2, 4, 84, 84))
    spec = QNetworkSpec(encoder_config=encoder.model_dump(), head_config={"hidden_size": [16]})
    network = QNetwork(STACKED, spaces.Discrete(6), spec)
    assert network(frames).shape == (2, 6)


def test_image_observations_are_told_by_building_the_environment():
    assert image_observations("ALE/Pong-v5") is True
    assert image_observations("CartPole-v1") is False
    assert image_observations("NoSuchEnv-v0") is None


def test_init_writes_a_cnn_with_preprocessing_and_frame_storage_which_trains(tmp_path, capsys):
    path = tmp_path / "dqn.yaml"
    assert main(["init", "DQN", "--env", "ALE/Pong-v5", "-o", str(path)]) == 0
    manifest = load_manifest(path)
    assert manifest.network.arch == "cnn"
    assert manifest.environment.atari is not None and manifest.environment.atari.frame_stack == 4
    assert manifest.replay_buffer.storage == "frames"
    assert main(["validate", str(path)]) == 0
    out = tmp_path / "run"
    overrides = [
        "training.max_steps=64", "training.evo_steps=32", "training.eval_steps=20",
        "training.pop_size=2", "environment.num_envs=2", "environment.vectorize=sync",
        "replay_buffer.max_size=256", "algorithm.batch_size=16", "algorithm.learn_step=4",
    ]  # fmt: skip
    args = ["train", str(path), "--out", str(out), "--quiet"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0, capsys.readouterr().err
    assert (out / "best_agent.pt").is_file()


@pytest.mark.parametrize("name", ["dqn_pong.yaml", "ppo_breakout.yaml"])
def test_the_benchmark_manifests_are_valid_and_give_stacked_frames(name, capsys):
    path = ROOT / "configs" / "benchmarks" / name
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    env = make_env(load_manifest(path).environment)
    try:
        assert env.observation_space == STACKED
    finally:
        env.close()


def test_ppo_trains_a_shared_cnn_on_stacked_frames(tmp_path, capsys):
    path = ROOT / "configs" / "benchmarks" / "ppo_breakout.yaml"
    overrides = [
        "training.max_steps=64", "training.evo_steps=64", "training.eval_steps=20",
        "training.pop_size=2", "environment.num_envs=2", "algorithm.learn_step=32",
        "algorithm.batch_size=16",
    ]  # fmt: skip
    args = ["train", str(path), "--out", str(tmp_path / "run"), "--quiet"]
    for override in overrides:
        args += ["--set", override]
    assert main(args) == 0, capsys.readouterr().err
    assert (tmp_path / "run" / "best_agent.pt").is_file()


def test_preprocessing_without_opencv_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "cv2", None)  # as if OpenCV were not installed
    with pytest.raises(
        EnvironmentSpecError, match=r"environment\.atari: .*pip install 'agilespec\[atari\]'"
    ):
        make_env(GymEnvSpec(name="ALE/Pong-v5", atari={}))


def test_the_preflight_counts_about_one_frame_a_transition():
    from agilerl.families.single_agent.preflight import estimate
    from agilerl.trainer import LocalTrainer

    frames = load_manifest(ROOT / "configs" / "benchmarks" / "dqn_pong.yaml")
    assert frames.replay_buffer.storage == "frames"
    plain = frames.model_copy(
        update={"replay_buffer": frames.replay_buffer.model_copy(update={"storage": "transitions"})}
    )

    def replay_bytes(manifest) -> int:
        needs = estimate(LocalTrainer.from_manifest(manifest).context).needs
        return next(need.bytes for need in needs if need.field == "replay_buffer.max_size")

    # 100k rows: 8 frames of 84x84 each as transitions, about one as frames
    assert replay_bytes(plain) > 5.6e9
    assert replay_bytes(frames) < 0.8e9


# -- scoring: evaluation plays whole games of the game's own rewards -------------------
def test_the_scoring_spec_plays_whole_games_of_the_games_rewards():
    spec = GymEnvSpec(name="ALE/Breakout-v5", atari={"noop_max": 7}, num_envs=2)
    scored = scoring_spec(spec)
    assert not scored.atari.episodic_life and not scored.atari.clip_reward
    assert scored.atari.noop_max == 7 and scored.num_envs == 2  # the rest as trained
    unshaped = GymEnvSpec(name="ALE/Breakout-v5", atari={"episodic_life": False,
                                                         "clip_reward": False})  # fmt: skip
    assert scoring_spec(unshaped) is unshaped
    cartpole = GymEnvSpec(name="CartPole-v1")
    assert scoring_spec(cartpole) is cartpole


class _Left:
    """Always LEFT: never presses FIRE, so a game that waits for a serve waits for ever."""

    def __init__(self, env) -> None:
        self.observation_space, self.action_space = env.observation_space, env.action_space

    def predict(self, obs, state=None, episode_start=None, deterministic=False, action_mask=None):
        return 3, None


def _play(env, policy, seed: int) -> tuple[int, float]:
    env.reset(seed=seed)
    steps, total = 0, 0.0
    while True:
        _, reward, terminated, truncated, _ = env.step(policy.predict(None)[0])
        steps, total = steps + 1, total + float(reward)
        if terminated or truncated:
            return steps, total


def test_a_whole_game_is_served_again_after_each_lost_life_and_evaluate_plays_one():
    spec = GymEnvSpec(name="ALE/Breakout-v5", atari={})
    env = make_env(scoring_spec(spec))
    try:
        policy = _Left(env)
        steps, _ = _play(env, policy, seed=3)
        # every life was served (FIRE after each loss): the game is over, not truncated
        assert env.unwrapped.ale.lives() == 0 and env.unwrapped.ale.game_over()
    finally:
        env.close()
    trained = make_env(spec)  # what the learner sees: the first lost life ends it
    try:
        first_life, _ = _play(trained, policy, seed=3)
        assert trained.unwrapped.ale.lives() == 4
    finally:
        trained.close()
    assert steps > 3 * first_life
    result = run_episodes(policy, spec, episodes=1, seed=3)  # agilerl evaluate's episodes
    assert result.lengths == [steps]


def test_the_loops_evaluate_on_environments_of_the_scoring_spec():
    spec = GymEnvSpec(name="ALE/Breakout-v5", atari={}, num_envs=2, vectorize="sync")
    env = make_vector_env(spec)
    scoring = Scoring(env, spec)
    try:
        assert scoring.env is not env and scoring.env.num_envs == 2
        copy = scoring.env.envs[0]
        assert EpisodicLife not in _chain(copy) and ClipReward not in _chain(copy)
        training_cohorts = CohortEnvs(spec)
        scoring.evaluation(None, 1, training_cohorts)
        (own,) = scoring._cohorts.take(1).envs  # a cohort's agent: one of its own
        assert EpisodicLife not in _chain(own.envs[0])
        assert training_cohorts.built == {}
    finally:
        scoring.close()
        env.close()
    assert scoring._cohorts.built == {}  # what it built, it closed
    cartpole = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=2))
    try:
        unshaped = Scoring(cartpole, GymEnvSpec(name="CartPole-v1", num_envs=2))
        assert unshaped.env is cartpole and unshaped.spec is None
        shared = CohortEnvs(GymEnvSpec(name="CartPole-v1", num_envs=2))
        unshaped.evaluation(None, 1, shared)
        assert unshaped._cohorts is shared  # the cohort's own training envs
    finally:
        cartpole.close()
