"""RolloutBuffer: preallocated storage, GAE and discounted returns, minibatch passes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.components.rollout_buffer import RolloutBuffer

OBS = spaces.Box(-1.0, 1.0, (3,))
ACT = spaces.Discrete(4)


def _reference_gae(rewards, values, dones, last_value, gamma, lam):
    """GAE written out directly from its definition, one environment at a time."""
    steps, envs = rewards.shape
    adv = np.zeros((steps, envs))
    for e in range(envs):
        following = 0.0
        for t in reversed(range(steps)):
            next_value = last_value[e] if t == steps - 1 else values[t + 1, e]
            live = 1.0 - dones[t, e]
            delta = rewards[t, e] + gamma * live * next_value - values[t, e]
            following = delta + gamma * lam * live * following
            adv[t, e] = following
    return adv, adv + values


def _reference_returns(rewards, dones, last_value, gamma):
    steps, envs = rewards.shape
    ret = np.zeros((steps, envs))
    for e in range(envs):
        following = last_value[e]
        for t in reversed(range(steps)):
            following = rewards[t, e] + gamma * (1.0 - dones[t, e]) * following
            ret[t, e] = following
    return ret


def _filled(use_gae=True, steps=7, envs=3, gamma=0.9, lam=0.8, seed=0):
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(steps, envs)).astype(np.float32)
    values = rng.normal(size=(steps, envs)).astype(np.float32)
    dones = np.zeros((steps, envs), dtype=np.float32)
    dones[2, 0] = dones[4, 1] = dones[5, 0] = 1.0  # episodes ending mid-rollout
    dones[steps - 1, 2] = 1.0  # and one ending on the very last step
    last_value = rng.normal(size=envs).astype(np.float32)
    buf = RolloutBuffer(steps, envs, OBS, ACT, gamma=gamma, gae_lambda=lam, use_gae=use_gae)
    for t in range(steps):
        buf.add(
            rng.normal(size=(envs, 3)),
            rng.integers(4, size=envs),
            rewards[t],
            dones[t],
            torch.as_tensor(values[t]),
            torch.zeros(envs),
        )
    buf.compute_returns_and_advantages(torch.as_tensor(last_value))
    return buf, rewards, values, dones, last_value


def test_gae_matches_reference():
    buf, rewards, values, dones, last_value = _filled()
    adv, ret = _reference_gae(rewards, values, dones, last_value, 0.9, 0.8)
    np.testing.assert_allclose(buf.advantages.numpy(), adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buf.returns.numpy(), ret, rtol=1e-5, atol=1e-5)


def test_gae_by_hand_on_two_steps():
    # gamma 0.5, lambda 0.5; one environment, an episode ending after step 0.
    buf = RolloutBuffer(2, 1, OBS, ACT, gamma=0.5, gae_lambda=0.5)
    buf.add(np.zeros((1, 3)), [0], [1.0], [1.0], torch.tensor([2.0]), torch.zeros(1))
    buf.add(np.zeros((1, 3)), [0], [3.0], [0.0], torch.tensor([4.0]), torch.zeros(1))
    buf.compute_returns_and_advantages(torch.tensor([10.0]))
    # step 1: delta = 3 + 0.5 * 10 - 4 = 4; step 0 ends its episode: delta = 1 - 2 = -1.
    assert buf.advantages[:, 0].tolist() == [-1.0, 4.0]
    assert buf.returns[:, 0].tolist() == [1.0, 8.0]


def test_discounted_returns_without_gae():
    buf, rewards, values, dones, last_value = _filled(use_gae=False)
    ret = _reference_returns(rewards, dones, last_value, 0.9)
    np.testing.assert_allclose(buf.returns.numpy(), ret, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(buf.advantages.numpy(), ret - values, rtol=1e-5, atol=1e-5)


def test_gae_with_lambda_one_is_discounted_return_minus_value():
    gae = _filled(lam=1.0)[0]
    plain = _filled(lam=1.0, use_gae=False)[0]
    torch.testing.assert_close(gae.advantages, plain.advantages, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gae.returns, plain.returns, rtol=1e-5, atol=1e-5)


def test_last_done_overrides_the_last_stored_flags():
    buf, rewards, values, dones, last_value = _filled()
    buf.compute_returns_and_advantages(torch.as_tensor(last_value), last_done=np.ones(3))
    dones[-1] = 1.0
    adv, _ = _reference_gae(rewards, values, dones, last_value, 0.9, 0.8)
    np.testing.assert_allclose(buf.advantages.numpy(), adv, rtol=1e-5, atol=1e-5)


def test_partial_rollout_uses_only_the_filled_steps():
    buf = RolloutBuffer(10, 2, OBS, ACT, gamma=0.5, gae_lambda=1.0)
    buf.add(np.zeros((2, 3)), [0, 1], [1.0, 2.0], [0, 0], torch.zeros(2), torch.zeros(2))
    buf.compute_returns_and_advantages(torch.tensor([2.0, 4.0]))
    assert buf.returns[0].tolist() == [2.0, 4.0]
    assert len(buf) == 2
    assert sum(len(b.actions) for b in buf.minibatches(3)) == 2


@pytest.mark.parametrize("batch_size", [1, 4, 5, 21, 100])
def test_every_sample_once_per_pass(batch_size):
    steps, envs = 7, 3
    buf = RolloutBuffer(steps, envs, OBS, spaces.Box(-1, 1, (2,)))
    for t in range(steps):
        ids = np.arange(envs) + t * envs
        buf.add(
            np.stack([ids, ids, ids], axis=1),
            np.stack([ids, -ids], axis=1),
            ids,
            np.zeros(envs),
            torch.as_tensor(ids, dtype=torch.float32),
            torch.as_tensor(-ids, dtype=torch.float32),
        )
    buf.compute_returns_and_advantages(torch.zeros(envs))
    for _ in range(2):  # every epoch is a full pass
        seen = []
        batches = list(buf.minibatches(batch_size))
        assert all(len(b.actions) == batch_size for b in batches[:-1])
        for b in batches:
            ids = b.obs[:, 0]
            # every field of a sample comes from the same (step, env) row
            assert torch.equal(b.actions[:, 0], ids) and torch.equal(b.actions[:, 1], -ids)
            assert torch.equal(b.values, ids) and torch.equal(b.log_probs, -ids)
            assert torch.allclose(b.returns, b.advantages + b.values)
            seen += ids.long().tolist()
        assert sorted(seen) == list(range(steps * envs))


def test_minibatch_order_follows_the_global_torch_seed():
    buf = _filled()[0]
    torch.manual_seed(3)
    first = [b.values.tolist() for b in buf.minibatches(4)]
    torch.manual_seed(3)
    assert [b.values.tolist() for b in buf.minibatches(4)] == first


def test_storage_is_preallocated_and_reused():
    buf = RolloutBuffer(4, 2, OBS, ACT)
    pointers = [t.data_ptr() for t in (buf.obs, buf.actions, buf.rewards, buf.values)]
    assert buf.obs.shape == (4, 2, 3) and buf.actions.dtype == torch.int64
    for _ in range(2):
        buf.reset()
        for _ in range(4):
            buf.add(np.ones((2, 3)), [1, 2], [0.0, 0.0], [0, 0], torch.zeros(2), torch.zeros(2))
        assert buf.full
    assert pointers == [t.data_ptr() for t in (buf.obs, buf.actions, buf.rewards, buf.values)]
    with pytest.raises(RuntimeError, match="full"):
        buf.add(np.ones((2, 3)), [1, 2], [0.0, 0.0], [0, 0], torch.zeros(2), torch.zeros(2))


def test_nested_observations_and_action_masks():
    obs_space = spaces.Dict(
        {
            "img": spaces.Box(0, 255, (1, 2, 2), dtype=np.uint8),
            "parts": spaces.Tuple((spaces.Discrete(3), spaces.MultiBinary(2))),
        }
    )
    buf = RolloutBuffer(3, 2, obs_space, spaces.MultiDiscrete([2, 3]))
    assert buf.obs["img"].dtype == torch.uint8 and buf.obs["parts"][0].dtype == torch.int64
    assert buf.action_masks is None
    for t in range(3):
        obs = {
            "img": np.full((2, 1, 2, 2), t, dtype=np.uint8),
            "parts": (np.array([t, t]), np.array([[1, 0], [0, 1]], dtype=np.int8)),
        }
        mask = None if t == 0 else np.array([[1, 0, 1, 1, 0], [0, 1, 0, 0, 1]], dtype=np.int8)
        buf.add(obs, [[1, 2], [0, 0]], [1.0, 1.0], [0, 0], torch.zeros(2), torch.zeros(2), mask)
    assert buf.action_masks.shape == (3, 2, 5)
    assert buf.action_masks[0].all()  # before the first mask: everything allowed
    buf.compute_returns_and_advantages(torch.zeros(2))
    (batch,) = list(buf.minibatches(6))
    assert batch.obs["img"].shape == (6, 1, 2, 2) and batch.obs["parts"][1].shape == (6, 2)
    assert batch.action_masks.shape == (6, 5) and batch.actions.shape == (6, 2)
    for i in range(6):  # the mask travels with its sample
        step = int(batch.obs["parts"][0][i])
        assert batch.action_masks[i].all() == (step == 0)


def test_errors():
    with pytest.raises(ValueError, match="capacity"):
        RolloutBuffer(0, 1, OBS, ACT)
    buf = RolloutBuffer(2, 2, OBS, ACT)
    with pytest.raises(RuntimeError, match="empty"):
        buf.compute_returns_and_advantages(torch.zeros(2))
    with pytest.raises(ValueError, match="expected"):
        buf.add(np.zeros((3, 3)), [0, 0], [0, 0], [0, 0], torch.zeros(2), torch.zeros(2))
    buf.reset()
    buf.add(np.zeros((2, 3)), [0, 0], [0, 0], [0, 0], torch.zeros(2), torch.zeros(2))
    with pytest.raises(RuntimeError, match="compute_returns_and_advantages"):
        next(buf.minibatches(2))
    with pytest.raises(TypeError, match="unsupported"):
        RolloutBuffer(2, 2, spaces.Text(3), ACT)
