"""Images observed channels last, ``(H, W, C)``, reach the CNN channels first.

Gymnasium's ALE games without preprocessing and PettingZoo's butterfly games observe
``(H, W, C)``; the CNN encoder takes ``(C, H, W)``. The environments the engine builds
turn them around (``agilerl.components.observations.channels_last``), so AgileRL's image manifests
train as written: ``configs/ppo/ppo_image.yaml`` (Breakout, 210 x 160 x 3),
``tests/ppo_cnn.yaml`` (``DummyImage-v0``, registered here as AgileRL's tests register
it), ``tests/ippo_cnn.yaml`` and ``configs/multi_agent/ippo_pong.yaml`` (cooperative
pong, 280 x 480 x 3).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from support import TESTS
from support.corpus import IMAGES

from agilerl.components.observations import channels_first, channels_last
from agilerl.families.multi_agent.envs import make_parallel_env
from agilerl.families.single_agent.envs import make_env
from agilerl.files.documents import load_document
from agilerl.models.env import GymEnvSpec, PettingZooEnvSpec
from agilerl.models.manifest import parse_manifest
from agilerl.trainer import LocalTrainer

CORPUS = TESTS / "agilerl_manifests"


class ColourCue(gym.Env):
    """One step: an 8 x 8 RGB image, all red or all green, channels last; the action
    that matches the colour pays 1. Only an agent that reads the channels learns it."""

    observation_space = spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.colour = int(self.np_random.integers(2))
        image = np.zeros((8, 8, 3), np.uint8)
        image[..., self.colour] = 255
        return image, {}

    def step(self, action):
        reward = float(action == self.colour)
        return self.reset()[0], reward, True, False, {}


class DummyImage(gym.Env):
    """AgileRL's test environment of this id: random 64 x 64 RGB frames (channels
    last), two actions, episodes of 20 steps."""

    observation_space = spaces.Box(0, 255, (64, 64, 3), np.uint8)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action), False, self.t >= 20, {}


def test_which_spaces_are_channels_last():
    assert channels_last(spaces.Box(0, 255, (210, 160, 3), np.uint8))
    assert channels_last(spaces.Box(0, 1, (84, 84, 1), np.float32))
    assert not channels_last(spaces.Box(0, 255, (4, 84, 84), np.uint8))  # frame stack
    assert not channels_last(spaces.Box(0, 255, (3, 64, 64), np.uint8))
    assert not channels_last(spaces.Box(-1, 1, (5, 5, 5)))  # a cube: no channel axis
    assert not channels_last(spaces.Box(-1, 1, (8, 3)))
    assert not channels_last(spaces.Discrete(3))


def test_a_channels_last_environment_is_built_channels_first():
    gym.register("ColourCue-v0", entry_point=ColourCue)
    try:
        env = make_env(GymEnvSpec(name="ColourCue-v0"))
        assert env.observation_space.shape == (3, 8, 8)
        assert env.observation_space.dtype == np.uint8
        obs, _ = env.reset(seed=1)
        raw, _ = ColourCue().reset(seed=1)
        assert np.array_equal(obs, np.moveaxis(raw, -1, 0))
        assert obs[env.unwrapped.colour].min() == 255 and obs.sum() == 255 * 64
    finally:
        gym.registry.pop("ColourCue-v0")


def test_a_batch_is_turned_per_image():
    batch = np.arange(2 * 4 * 5 * 3).reshape(2, 4, 5, 3)
    turned = channels_first(batch)
    assert turned.shape == (2, 3, 4, 5) and turned.flags.c_contiguous
    assert np.array_equal(turned[1, 2], batch[1, :, :, 2])


def test_an_agent_learns_from_a_channels_last_image():
    training = {"max_steps": 1_500, "evo_steps": 500, "pop_size": 1, "seed": 0, "eval_steps": 50}
    trainer = LocalTrainer("DQN", {"num_envs": 2}, training=training, env=ColourCue)
    trainer.train(verbose=False)
    env, agent = ColourCue(), trainer.best_agent
    rewards = []
    for seed in range(40):
        image, _ = env.reset(seed=seed)
        action = agent.predict(channels_first(image), deterministic=True)[0]
        rewards.append(env.step(action)[1])
    assert np.mean(rewards) >= 0.9


def test_a_butterfly_game_is_observed_channels_first():
    env = make_parallel_env(PettingZooEnvSpec(name="pettingzoo.butterfly.cooperative_pong_v6"))
    try:
        for agent in env.possible_agents:
            assert env.observation_space(agent).shape == (3, 280, 480)
        obs, _ = env.reset(seed=0)
        assert all(o.shape == (3, 280, 480) for o in obs.values())
    finally:
        env.close()


#: What each image manifest changes beyond the budget: two in-process copies, one pass
#: over one minibatch per update and, on the full-size frames, one agent (a learning step
#: on 210 x 160 or 280 x 480 frames takes seconds on 2 cores). What is exercised is the
#: manifest's own CNN on the game's own frames; tests/ppo_cnn.yaml keeps its population.
ONE_AGENT = {"training": {"pop_size": 1}}
ADJUST = {name: ONE_AGENT for name in IMAGES if name != "tests/ppo_cnn.yaml"}


@pytest.fixture
def dummy_image():
    gym.register("DummyImage-v0", entry_point=DummyImage)
    yield
    gym.registry.pop("DummyImage-v0")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(IMAGES))
def test_agilerls_image_manifests_train(name, dummy_image):
    data, _ = load_document(CORPUS / name)
    data.setdefault("training", {}).update(
        max_steps=64, evo_steps=64, eval_steps=10, target_score=None, seed=0
    )
    data["environment"].update(num_envs=2, sync=True)
    data["algorithm"].update(learn_step=32, batch_size=64, update_epochs=1)
    for section, changes in ADJUST.get(name, {}).items():
        data[section].update(changes)
    manifest = parse_manifest(data)
    trainer = LocalTrainer.from_manifest(manifest)
    population, fitnesses = trainer.train(verbose=False)
    assert len(population) == len(fitnesses) == manifest.training.pop_size
    assert trainer.state.finished == "max_steps"
    assert all(np.isfinite(fitnesses))
