"""``agent.predict``: one observation or a batch in, actions of the environment's own action
space out, on every observation and action space the engine supports."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms import DQN, PPO
from agilerl.components.exploration import EPS_END

NET = {"head_config": {"hidden_size": [8]}, "latent_dim": 8}
SMALL_CNN = {"arch": "cnn", "channel_size": [8], "kernel_size": [3], "stride_size": [2]}
OBS_SPACES = {
    "box": spaces.Box(-1.0, 1.0, (4,)),
    "image": spaces.Box(0, 255, (3, 8, 8), np.uint8),
    "discrete": spaces.Discrete(5, start=2),
    "multidiscrete": spaces.MultiDiscrete([3, 4]),
    "multibinary": spaces.MultiBinary(5),
    "dict": spaces.Dict({"img": spaces.Box(0.0, 1.0, (3, 8, 8)), "vec": spaces.Box(-1, 1, (3,))}),
    "tuple": spaces.Tuple((spaces.Box(-1.0, 1.0, (2,)), spaces.Discrete(3))),
}
BOX = spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32))
#: (algorithm, action space, extra constructor arguments) for every supported action space.
ACTIONS = {
    "dqn-discrete": (DQN, spaces.Discrete(3, start=-1), {}),
    "dqn-multidiscrete": (DQN, spaces.MultiDiscrete([[3, 2], [4, 3]], start=[[1, 0], [0, 5]]), {}),
    "ppo-discrete": (PPO, spaces.Discrete(3), {}),
    "ppo-multidiscrete": (PPO, spaces.MultiDiscrete([3, 2], start=[1, -1]), {}),
    "ppo-multibinary": (PPO, spaces.MultiBinary(3), {}),
    "ppo-box": (PPO, BOX, {}),
    "ppo-box-squashed": (PPO, BOX, {"net_config": {**NET, "squash_output": True}}),
}


def _net(obs_space):
    if isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 3:
        return {**NET, "encoder_config": SMALL_CNN}
    return NET


def _agent(cls, obs_space, action_space, **kwargs):
    torch.manual_seed(0)
    kwargs.setdefault("net_config", _net(obs_space))
    return cls(obs_space, action_space, seed=0, **kwargs)


def _batch(space, n, seed=0):
    space.seed(seed)
    items = [space.sample() for _ in range(n)]
    if isinstance(space, spaces.Dict):
        return {k: np.stack([o[k] for o in items]) for k in space.spaces}
    if isinstance(space, spaces.Tuple):
        return tuple(np.stack([o[i] for o in items]) for i in range(len(space.spaces)))
    return np.stack(items)


def _act(agent, obs, deterministic=True, **kwargs):
    """The action of ``predict``'s ``(action, state)``; a feed-forward agent has no state."""
    action, state = agent.predict(obs, deterministic=deterministic, **kwargs)
    assert state is None
    return action


def _assert_one_action(action, space):
    if isinstance(space, spaces.Discrete):
        assert type(action) is int
    else:
        assert isinstance(action, np.ndarray)
        assert action.shape == space.shape and action.dtype == space.dtype
    assert space.contains(action), (action, space)


@pytest.mark.parametrize("cls", [DQN, PPO])
def test_an_unbatched_cartpole_observation_gives_an_action_env_step_takes(cls):
    # The reported failure: "mat1 and mat2 shapes cannot be multiplied".
    env = gym.make("CartPole-v1")
    agent = cls(env.observation_space, env.action_space)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        action = _act(agent, obs)
        _assert_one_action(action, env.action_space)
        obs, *_ = env.step(action)
    env.close()


@pytest.mark.parametrize("cls", [DQN, PPO])
@pytest.mark.parametrize("obs_name", list(OBS_SPACES))
def test_single_and_batched_observations_of_every_observation_space(cls, obs_name):
    obs_space, action_space = OBS_SPACES[obs_name], spaces.Discrete(3)
    agent = _agent(cls, obs_space, action_space)
    batch = _batch(obs_space, 4)
    actions = _act(agent, batch)
    assert isinstance(actions, np.ndarray) and actions.shape == (4,)
    for i in range(4):
        one = (
            {k: v[i] for k, v in batch.items()}
            if isinstance(batch, dict)
            else tuple(v[i] for v in batch)
            if isinstance(batch, tuple)
            else batch[i]
        )
        action = _act(agent, one)
        _assert_one_action(action, action_space)
        assert action == actions[i]  # unbatched in, the same action as in a batch


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("name", list(ACTIONS))
def test_actions_are_in_the_environments_action_space(name, deterministic):
    cls, action_space, kwargs = ACTIONS[name]
    obs_space = OBS_SPACES["box"]
    agent = _agent(cls, obs_space, action_space, **kwargs)
    batch = _batch(obs_space, 6)
    for row in batch:
        _assert_one_action(_act(agent, row, deterministic=deterministic), action_space)
    actions = _act(agent, batch, deterministic=deterministic)
    assert isinstance(actions, np.ndarray) and actions.shape == (6, *action_space.shape)
    assert all(action_space.contains(a.item() if a.ndim == 0 else a) for a in actions)


def test_box_actions_are_clipped_into_the_bounds():
    agent = _agent(PPO, OBS_SPACES["box"], BOX)
    with torch.no_grad():  # a policy mean far outside [-1, 1] x [0, 2]
        agent.actor.head.out.bias.copy_(torch.tensor([50.0, -50.0]))
    action = _act(agent, np.zeros(4, np.float32))
    np.testing.assert_array_equal(action, np.array([1.0, 0.0], np.float32))


@pytest.mark.parametrize("cls", [DQN, PPO])
@pytest.mark.parametrize("deterministic", [True, False])
def test_action_masks_for_one_observation_or_a_batch(cls, deterministic):
    agent = _agent(cls, OBS_SPACES["box"], spaces.Discrete(4))
    batch = _batch(OBS_SPACES["box"], 8)
    for row in batch:
        assert _act(agent, row, deterministic=deterministic, action_mask=[0, 0, 1, 0]) == 2
    masks = np.zeros((8, 4), dtype=np.int8)
    masks[np.arange(8), np.arange(8) % 4] = 1
    chosen = _act(agent, batch, deterministic=deterministic, action_mask=masks)
    np.testing.assert_array_equal(chosen, np.arange(8) % 4)


def test_sampled_actions_vary_and_greedy_ones_do_not():
    agent = _agent(PPO, OBS_SPACES["box"], spaces.Discrete(3))
    obs = np.zeros(4, np.float32)
    assert len({_act(agent, obs, deterministic=True) for _ in range(30)}) == 1
    assert len({_act(agent, obs, deterministic=False) for _ in range(60)}) > 1


def test_dqn_samples_with_the_final_exploration_rate_of_training():
    assert DQN.sample_epsilon == EPS_END
    agent = _agent(DQN, OBS_SPACES["box"], spaces.Discrete(3))
    agent.sample_epsilon = 1.0  # all random: every action shows up
    obs = np.zeros(4, np.float32)
    assert {_act(agent, obs, deterministic=False) for _ in range(60)} == {0, 1, 2}


def test_torch_tensors_and_lists_are_observations_too():
    agent = _agent(PPO, OBS_SPACES["box"], spaces.Discrete(3))
    obs = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
    expected = _act(agent, obs)
    assert _act(agent, torch.as_tensor(obs)) == expected
    assert _act(agent, obs.tolist()) == expected
    assert _act(agent, torch.as_tensor(obs[None])).tolist() == [expected]


@pytest.mark.parametrize(
    ("obs_name", "obs", "message"),
    [
        ("box", np.zeros(3), r"obs: shape \(3,\) fits neither one observation .* \(shape \(4,\)\) nor a batch \(shape \(n, 4\)\)"),
        ("box", np.zeros((2, 2, 4)), r"obs: shape \(2, 2, 4\) fits neither"),
        ("image", np.zeros((8, 8, 3)), r"shape \(8, 8, 3\) fits neither .* \(shape \(3, 8, 8\)\)"),
        ("discrete", np.zeros((2, 2)), r"obs: shape \(2, 2\) fits neither .* \(shape \(\)\) nor a batch \(shape \(n\)\)"),
        ("dict", {"img": np.zeros((3, 8, 8))}, r"obs: missing key\(s\) \['vec'\]"),
        ("dict", {"img": np.zeros((3, 8, 8)), "vec": np.zeros((2, 3))}, r"obs: its parts disagree"),
        ("dict", np.zeros(3), r"obs: expected a dict with keys \['img', 'vec'\]"),
        ("tuple", (np.zeros(2),), r"obs: expected a tuple of 2 parts"),
        ("tuple", (np.zeros(5), 1), r"obs\[0\]: shape \(5,\) fits neither"),
    ],
)  # fmt: skip
def test_observations_of_the_wrong_shape_are_a_clear_error(obs_name, obs, message):
    agent = _agent(PPO, OBS_SPACES[obs_name], spaces.Discrete(3))
    with pytest.raises(ValueError, match=message):
        agent.predict(obs)


def test_predict_returns_action_and_state_as_stable_baselines3s_does():
    # SB3's loop, unchanged: obs in, (action, state) out, state and episode_start fed back
    env = gym.make("CartPole-v1")
    agent = PPO(env.observation_space, env.action_space)
    obs, _ = env.reset(seed=0)
    state, episode_start = None, True
    for _ in range(5):
        action, state = agent.predict(obs, state=state, episode_start=episode_start)
        assert state is None and env.action_space.contains(action)
        obs, _, terminated, truncated, _ = env.step(action)
        episode_start = terminated or truncated
    env.close()
    # deterministic is False by default, as in SB3: sampled actions vary
    obs = np.zeros(4, np.float32)
    assert len({agent.predict(obs)[0] for _ in range(60)}) > 1
