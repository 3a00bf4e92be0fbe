"""NStepReplayBuffer: n-step returns by hand across a termination and a truncation in a
2-env vector, alignment with a prioritised buffer, nested observations, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay_buffer import FIELDS
from agilerl.files import checkpoints
from agilerl.models import ReplayBufferSpec

GAMMA = 0.5
STEPS = 6
#: Env 0 terminates at step 2 (a new episode starts at step 3); env 1 is truncated by a
#: time limit at step 3 (a new episode starts at step 4).
REWARDS = np.array([[1, 10], [2, 20], [3, 30], [4, 40], [5, 50], [6, 60]], dtype=np.float64)
TERMINATED = np.zeros((STEPS, 2), dtype=bool)
TERMINATED[2, 0] = True
TRUNCATED = np.zeros((STEPS, 2), dtype=bool)
TRUNCATED[3, 1] = True


def _obs(t):
    """Observation of each env before step t: [10 * env + t]."""
    return np.array([[t], [10 + t]], dtype=np.float32)


def _next_obs(t):
    """What step t leads to: [10 * env + t + 0.5] (the final one where an episode ended)."""
    return _obs(t) + 0.5


def _run(buffer, flush=True):
    """Feed the scripted 6 steps; the 1-step rows each add returned."""
    returned = []
    for t in range(STEPS):
        action = np.array([t, 100 + t])
        out = buffer.add(_obs(t), action, REWARDS[t], _next_obs(t), TERMINATED[t], TRUNCATED[t])
        returned.append(out)
    if flush:
        returned.append(buffer.flush())
    return returned


def _rows(buffer):
    state = buffer.state_dict()["buffer"]["data"]
    return {name: state[name] for name in (*FIELDS, "discount")}


# Hand computation, gamma = 0.5, n = 3; rows in the order stored (step t: env 0, env 1).
# env 0: t0: 1 + 2/2 + 3/4 (ends with the termination at t2); t1: 2 + 3/2; t2: 3;
#        t3: 4 + 5/2 + 6/4 (new episode); t4, t5 flushed: 5 + 6/2, 6.
# env 1: t0: 10 + 20/2 + 30/4; t1: 20 + 30/2 + 40/4 (the truncation at t3 is the window's
#        last step); t2: 30 + 40/2 (cut at the truncation); t3: 40; t4, t5: 50 + 60/2, 60.
N3 = {
    "reward": [2.75, 27.5, 3.5, 45.0, 3.0, 50.0, 8.0, 40.0, 8.0, 80.0, 6.0, 60.0],
    # bootstrap observation: env 0 from the terminal step 2 for t0..t2; env 1 from the
    # truncated episode's last observation (step 3) for t1..t3.
    "next_obs": [2.5, 12.5, 2.5, 13.5, 2.5, 13.5, 5.5, 13.5, 5.5, 15.5, 5.5, 15.5],
    "done": [True, False, True, False, True, False, False, False, False, False, False, False],
    # gamma ** (steps summed): the truncated returns are shorter than n.
    "discount": [
        1 / 8,
        1 / 8,
        1 / 4,
        1 / 8,
        1 / 2,
        1 / 4,
        1 / 8,
        1 / 2,
        1 / 4,
        1 / 4,
        1 / 2,
        1 / 2,
    ],
    "obs": [0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15],
    "action": [0, 100, 1, 101, 2, 102, 3, 103, 4, 104, 5, 105],
}


def test_three_step_returns_equal_a_hand_computation():
    buffer = NStepReplayBuffer(50, n_step=3, gamma=GAMMA)
    returned = _run(buffer)
    assert returned[:2] == [None, None]  # filling the 3-step window
    rows = _rows(buffer)
    np.testing.assert_allclose(rows["reward"].numpy(), N3["reward"])
    np.testing.assert_allclose(rows["next_obs"][:, 0].numpy(), N3["next_obs"])
    assert rows["done"].tolist() == N3["done"]
    np.testing.assert_allclose(rows["discount"].numpy(), N3["discount"])
    assert rows["obs"][:, 0].tolist() == N3["obs"]
    assert rows["action"].tolist() == N3["action"]
    assert rows["discount"].dtype == torch.float32 and rows["done"].dtype == torch.bool


def test_one_step_returns_are_the_transitions_themselves():
    buffer = NStepReplayBuffer(50, n_step=1, gamma=GAMMA)
    returned = _run(buffer)
    assert returned[-1] is None  # nothing pending with n = 1
    rows = _rows(buffer)
    np.testing.assert_array_equal(rows["reward"].numpy(), REWARDS.reshape(-1))
    np.testing.assert_array_equal(
        rows["next_obs"].numpy(), np.concatenate([_next_obs(t) for t in range(STEPS)])
    )
    assert rows["done"].tolist() == TERMINATED.reshape(-1).tolist()
    assert torch.all(rows["discount"] == GAMMA)
    for t in range(STEPS):  # each add returns its own step at once
        assert returned[t]["reward"].tolist() == REWARDS[t].tolist()


def test_each_add_returns_the_one_step_rows_of_the_step_it_stored():
    buffer = NStepReplayBuffer(50, n_step=3, gamma=GAMMA)
    returned = _run(buffer)
    one_step = [r for r in returned if r is not None]
    assert [len(r["reward"]) for r in one_step] == [2, 2, 2, 2, 4]  # the flush: steps 4, 5
    reward = torch.cat([r["reward"] for r in one_step])
    np.testing.assert_array_equal(reward.numpy(), REWARDS.reshape(-1))
    done = torch.cat([r["done"] for r in one_step])
    assert done.tolist() == TERMINATED.reshape(-1).tolist()
    assert set(one_step[0]) == set(FIELDS)
    assert buffer.pending == 0 and len(buffer) == 12


def test_rows_align_with_a_prioritised_buffer_across_wrap_around():
    n_step = NStepReplayBuffer(7, n_step=3, gamma=GAMMA)
    memory = PrioritizedReplayBuffer(7, alpha=0.6)
    rng = np.random.default_rng(0)
    for t in range(20):
        ended = rng.random(2) < 0.3
        obs = np.array([[t], [100 + t]], dtype=np.float32)
        one_step = n_step.add(obs, np.array([t, 100 + t]), rng.random(2), obs + 0.5, ended)
        if one_step is not None:
            memory.add(**one_step)
        if t == 9:  # e.g. the next agent's turn resets the environment
            memory.add(**n_step.flush())
    assert len(memory) == len(n_step) == 7 and memory.position == n_step.position
    memory.update_priorities(torch.arange(7), torch.arange(7.0))
    torch.manual_seed(0)
    batch = memory.sample(32, beta=0.4)
    n_batch = n_step.sample_from_indices(batch["indices"])
    assert torch.equal(batch["obs"], n_batch["obs"])
    assert torch.equal(batch["action"], n_batch["action"])
    # 1-step reward is the first term of the n-step return.
    assert torch.all(n_batch["reward"] >= batch["reward"])


def test_nested_observations_round_trip_with_pending_steps(tmp_path):
    def obs(t):
        return {"image": np.full((2, 1, 2), t, dtype=np.uint8), "pair": (_obs(t), _obs(t) * 2)}

    flags = np.zeros(2, dtype=bool)
    buffer = NStepReplayBuffer(10, n_step=3, gamma=GAMMA)
    for t in range(3):
        buffer.add(obs(t), np.zeros(2), np.ones(2), obs(t + 1), flags, flags)
    path = checkpoints.save(buffer.state_dict(), tmp_path / "n_step.ckpt")
    restored = NStepReplayBuffer(10, n_step=3, gamma=GAMMA)
    restored.load_state_dict(checkpoints.load(path))
    assert restored.pending == 2
    for target in (buffer, restored):
        target.flush()
    expected, got = buffer.state_dict()["buffer"]["data"], restored.state_dict()["buffer"]["data"]
    assert torch.equal(expected["next_obs"]["pair"][1], got["next_obs"]["pair"][1])
    assert torch.equal(expected["obs"]["image"], got["obs"]["image"])
    assert torch.equal(expected["reward"], got["reward"])


def test_dict_observations_take_the_bootstrap_leaves_of_each_environment():
    buffer = NStepReplayBuffer(20, n_step=2, gamma=GAMMA)

    def obs(t):
        return {"image": np.full((2, 1, 2), t, dtype=np.uint8), "vec": _obs(t)}

    def next_obs(t):
        return {"image": np.full((2, 1, 2), t + 50, dtype=np.uint8), "vec": _next_obs(t)}

    done = np.array([True, False])
    buffer.add(obs(0), np.zeros(2), np.ones(2), next_obs(0), done)  # env 0 ends at once
    buffer.add(obs(1), np.zeros(2), np.ones(2), next_obs(1), np.zeros(2, dtype=bool))
    row = buffer.sample_from_indices([0, 1])
    assert row["next_obs"]["image"][:, 0, 0].tolist() == [50, 51]  # env 0: its final obs
    assert row["next_obs"]["vec"][:, 0].tolist() == [0.5, 11.5]
    assert row["obs"]["image"][:, 0, 0].tolist() == [0, 0]
    assert row["reward"].tolist() == [1.0, 1.5]
    assert row["done"].tolist() == [True, False]


def test_pending_steps_own_their_data():
    buffer = NStepReplayBuffer(10, n_step=2, gamma=GAMMA)
    obs = _obs(0)
    buffer.add(obs, np.zeros(2), np.ones(2), obs + 1, np.zeros(2, dtype=bool))
    obs[:] = -1.0  # an environment that reuses its observation array
    buffer.add(_obs(1), np.zeros(2), np.ones(2), _obs(2), np.zeros(2, dtype=bool))
    assert buffer.sample_from_indices([0, 1])["obs"][:, 0].tolist() == [0.0, 10.0]


def test_defaults_and_spec():
    spec = ReplayBufferSpec(max_size=64, n_step_buffer=True, n_step_buffer_args={"n_step": 5})
    buffer = NStepReplayBuffer.from_spec(spec, gamma=0.9)
    assert (buffer.max_size, buffer.n_step, buffer.gamma) == (64, 5, 0.9)
    assert NStepReplayBuffer.from_spec(ReplayBufferSpec(), gamma=0.99).n_step == 3


def test_misuse_is_reported():
    for kwargs, match in (({"n_step": 0}, "n_step"), ({"gamma": 1.5}, "gamma")):
        with pytest.raises(ValueError, match=match):
            NStepReplayBuffer(10, **kwargs)
    buffer = NStepReplayBuffer(10, n_step=3)
    flags = np.zeros(2, dtype=bool)
    buffer.add(_obs(0), np.zeros(2), np.ones(2), _obs(1), flags)
    with pytest.raises(ValueError, match="3 environments after batches of 2"):
        buffer.add(np.zeros((3, 1)), np.zeros(3), np.ones(3), np.zeros((3, 1)), np.zeros(3))
    with pytest.raises(ValueError, match="same length"):
        buffer.add(_obs(0), np.zeros(2), np.ones(3), _obs(1), flags)
    with pytest.raises(ValueError, match="reward must hold one number"):
        buffer.add(_obs(0), np.zeros(2), np.ones((2, 1)), _obs(1), flags)
    assert buffer.pending == 1  # refused steps are not kept
    assert buffer.flush() is not None and buffer.flush() is None


# -- checkpoints --------------------------------------------------------------------------
def test_round_trip_through_a_checkpoint_file_continues_the_pending_windows(tmp_path):
    whole = NStepReplayBuffer(50, n_step=3, gamma=GAMMA)
    _run(whole)
    first = NStepReplayBuffer(50, n_step=3, gamma=GAMMA)
    for t in range(4):  # stop mid-run: two steps pending
        first.add(
            _obs(t), np.array([t, 100 + t]), REWARDS[t], _next_obs(t), TERMINATED[t], TRUNCATED[t]
        )
    assert first.pending == 2
    path = checkpoints.save({"n_step_memory": first.state_dict()}, tmp_path / "run.ckpt")
    resumed = NStepReplayBuffer(50, n_step=3, gamma=GAMMA)
    resumed.load_state_dict(checkpoints.load(path)["n_step_memory"])
    assert resumed.pending == 2 and len(resumed) == len(first)
    for t in range(4, STEPS):
        resumed.add(
            _obs(t), np.array([t, 100 + t]), REWARDS[t], _next_obs(t), TERMINATED[t], TRUNCATED[t]
        )
    resumed.flush()
    for name, expected in _rows(whole).items():
        assert torch.equal(_rows(resumed)[name], expected), name


def test_a_broken_state_is_refused_with_its_key_path_and_changes_nothing():
    source = NStepReplayBuffer(8, n_step=3, gamma=GAMMA)
    for t in range(4):
        source.add(_obs(t), np.zeros(2), REWARDS[t], _next_obs(t), TERMINATED[t])

    def broken(**changes):
        state = source.state_dict()
        state.update(changes)
        return state

    step = source.state_dict()["pending"][0]
    cases = (
        (broken(gamma=0.9), r"n_step_memory\.gamma: .*0\.9"),
        (broken(n_step=2), r"n_step_memory\.n_step"),
        (broken(pending=[step, step, step]), r"n_step_memory\.pending: 3 steps"),
        (
            broken(pending=[{k: v for k, v in step.items() if k != "truncated"}]),
            r"n_step_memory\.pending\[0\]\.truncated: missing",
        ),
        (
            broken(pending=[step, {**step, "reward": torch.ones(3)}]),
            r"n_step_memory\.pending\[1\]\.reward: expected a tensor of 2 rows",
        ),
        (
            broken(pending=[{**step, "done": torch.ones(2, 1)}]),
            r"pending\[0\]\.done: expected a 1-D",
        ),
        (broken(buffer={**source.state_dict()["buffer"], "size": 99}), r"n_step_memory\.buffer"),
    )
    target = NStepReplayBuffer(8, n_step=3, gamma=GAMMA)
    target.add(_obs(0), np.zeros(2), REWARDS[0], _next_obs(0), TERMINATED[0])
    for state, match in cases:
        with pytest.raises(checkpoints.CheckpointError, match=match):
            target.load_state_dict(state)
        assert target.pending == 1 and len(target) == 0
