"""FrameReplayBuffer: the same samples as a plain ReplayBuffer given the same batches
(episode boundaries, wrap-around, turns, journals, merging, checkpoints), with each
frame of a stacked observation stored about once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agilerl.cohorts.replay import LOCKSTEP_REPLAYS
from agilerl.components.frame_replay import FrameReplayBuffer
from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.replay import Replay, build_replay_buffers
from agilerl.components.replay_buffer import FIELDS, ReplayBuffer
from agilerl.files import checkpoints
from agilerl.models import DQNSpec, RainbowDQNSpec, ReplayBufferSpec

FRAME = (5, 6)


class StackedStream:
    """Vector steps of ``num_envs`` frame-stacked environments (k frames of random bytes)
    with same-step autoreset: a finished episode's ``next_obs`` is its final stack, and
    the next ``obs`` is a new episode's first stack (its first frame repeated, as
    Gymnasium's FrameStackObservation pads)."""

    def __init__(self, num_envs: int, k: int = 4, seed: int = 0, mean_length: int = 9) -> None:
        self.rng = np.random.default_rng(seed)
        self.k, self.num_envs, self.mean_length = k, num_envs, mean_length
        self.obs = np.stack([self._first() for _ in range(num_envs)])

    def _frame(self) -> np.ndarray:
        return self.rng.integers(0, 256, FRAME, dtype=np.uint8)

    def _first(self) -> np.ndarray:
        return np.repeat(self._frame()[None], self.k, axis=0)

    def step(self) -> tuple[np.ndarray, ...]:
        n = self.num_envs
        obs = self.obs
        frames = np.stack([self._frame() for _ in range(n)])
        next_obs = np.concatenate([obs[:, 1:], frames[:, None]], axis=1)
        done = self.rng.random(n) < 1 / self.mean_length
        action = self.rng.integers(0, 4, n)
        reward = self.rng.standard_normal(n).astype(np.float32)
        self.obs = next_obs.copy()
        for i in np.flatnonzero(done):
            self.obs[i] = self._first()
        return obs, action, reward, next_obs, done


def _both(max_size: int) -> tuple[ReplayBuffer, FrameReplayBuffer]:
    return ReplayBuffer(max_size), FrameReplayBuffer(max_size)


def _feed(buffers, stream: StackedStream, steps: int) -> None:
    for _ in range(steps):
        batch = stream.step()
        for buffer in buffers:
            buffer.add(*batch)


def _assert_same(plain: ReplayBuffer, frames: FrameReplayBuffer) -> None:
    """Every slot reads the same, and a seeded sample draws the same transitions."""
    assert (len(plain), plain.position) == (len(frames), frames.position)
    if not len(plain):
        return
    every = torch.arange(len(plain))
    expected, got = plain.sample_from_indices(every), frames.sample_from_indices(every)
    assert list(got) == list(FIELDS)
    for name in FIELDS:
        assert got[name].dtype == expected[name].dtype, name
        assert torch.equal(got[name], expected[name]), name
    torch.manual_seed(3)
    expected = plain.sample(16, return_indices=True)
    torch.manual_seed(3)
    got = frames.sample(16, return_indices=True)
    for name in (*FIELDS, "indices"):
        assert torch.equal(got[name], expected[name]), name


def test_same_samples_over_episodes_and_wraparound_with_one_frame_a_row():
    plain, frames = _both(50)
    stream = StackedStream(num_envs=3)
    for _ in range(6):  # 60 steps of 3 rows: the ring wraps around several times
        _feed((plain, frames), stream, 10)
        _assert_same(plain, frames)
    assert frames.sample(4)["obs"].dtype == torch.uint8


def test_about_one_frame_is_stored_a_row():
    plain, frames = _both(300)
    stream = StackedStream(num_envs=4, mean_length=100)
    _feed((plain, frames), stream, 400)
    _assert_same(plain, frames)
    # each episode's first row takes k + 1 frames, the oldest rows reach k - 1 steps back
    # and the pool keeps a sixteenth to spare: 358 frames for 300 rows here
    assert frames.capacity < 1.25 * frames.max_size
    plain_obs = sum(plain._storage[name].numel() for name in ("obs", "next_obs"))
    assert frames.frame_bytes() < plain_obs / 6  # plain keeps 2k = 8 frames a row


def test_observations_that_share_no_frames_are_stored_whole_and_read_back_exactly():
    plain, frames = _both(20)
    rng = np.random.default_rng(1)
    for _ in range(15):
        batch = _unrelated(rng)
        for buffer in (plain, frames):
            buffer.add(*batch)
        _assert_same(plain, frames)
    # the pool grew rather than lose a frame a held row refers to
    assert frames.capacity >= 2 * 3 * len(frames)


def test_batches_of_changing_size_and_larger_than_the_buffer():
    plain, frames = _both(7)
    stream = StackedStream(num_envs=4, seed=2)
    _feed((plain, frames), stream, 3)
    big = StackedStream(num_envs=10, seed=5)
    _feed((plain, frames), big, 2)  # 10 rows into 7 slots
    _assert_same(plain, frames)
    _feed((plain, frames), stream, 5)
    _assert_same(plain, frames)


def test_turns_journals_and_merge_match_a_plain_buffer():
    plain, frames = _both(40)
    stream = StackedStream(num_envs=2, seed=4)
    _feed((plain, frames), stream, 12)
    journals: dict[str, list] = {"plain": [], "frames": []}
    for turn in range(3):  # each turn overwrites pre-turn rows (25 steps of 2 > 40 - 24)
        for buffer in (plain, frames):
            buffer.begin_turn()
        agent = StackedStream(num_envs=2, seed=10 + turn)
        _feed((plain, frames), agent, 8 + 9 * turn)  # the last turn writes more than 40
        _assert_same(plain, frames)  # sampled during the turn
        journals["plain"].append(plain.end_turn())
        journals["frames"].append(frames.end_turn())
        _assert_same(plain, frames)  # as it stood at begin_turn
    # a journal travels between processes pickled, as CPU tensors
    assert journals["frames"][0]["frames"].device.type == "cpu"
    plain.merge(journals["plain"])
    frames.merge(journals["frames"])
    _assert_same(plain, frames)
    _feed((plain, frames), stream, 9)
    _assert_same(plain, frames)


def _unrelated(rng, rows: int = 2):
    """A batch whose observations share no frames (each row stores 2k)."""
    obs = rng.integers(0, 3, (rows, 3, *FRAME), dtype=np.uint8)
    next_obs = rng.integers(0, 3, (rows, 3, *FRAME), dtype=np.uint8)
    return obs, rng.integers(0, 4, rows), rng.random(rows), next_obs, rng.random(rows) < 0.5


def test_a_pool_that_grows_during_a_turn_is_put_back_by_serial():
    plain, frames = _both(12)
    rng = np.random.default_rng(2)
    # wrapped around, about a frame a row: the pool at its first capacity
    _feed((plain, frames), StackedStream(num_envs=2, k=3, mean_length=100), 8)
    capacity = frames.capacity
    for buffer in (plain, frames):
        buffer.begin_turn()
    for _ in range(10):
        batch = _unrelated(rng, rows=3)
        for buffer in (plain, frames):
            buffer.add(*batch)
    assert frames.capacity > capacity  # it grew, inside the turn
    _assert_same(plain, frames)
    journal, plain_journal = frames.end_turn(), plain.end_turn()
    _assert_same(plain, frames)
    plain.merge([plain_journal])
    frames.merge([journal])
    _assert_same(plain, frames)


def test_a_turn_on_an_empty_buffer_leaves_it_empty():
    plain, frames = _both(10)
    stream = StackedStream(num_envs=2, seed=6)
    for buffer in (plain, frames):
        buffer.begin_turn()
    _feed((plain, frames), stream, 4)
    journal = frames.end_turn()
    plain_journal = plain.end_turn()
    assert len(frames) == 0 and frames.capacity == 0
    plain.merge([plain_journal])
    frames.merge([journal])
    _assert_same(plain, frames)


def test_state_dict_round_trip_continues_identically(tmp_path):
    plain, frames = _both(30)
    stream = StackedStream(num_envs=3, seed=7)
    _feed((plain, frames), stream, 13)
    path = tmp_path / "memory.pt"
    checkpoints.save(frames.state_dict(), path)
    restored = FrameReplayBuffer(30)
    restored.load_state_dict(checkpoints.load(path))
    _assert_same(plain, restored)
    _feed((plain, restored), stream, 7)
    _assert_same(plain, restored)
    empty = FrameReplayBuffer(30)
    empty.load_state_dict(FrameReplayBuffer(30).state_dict())
    assert len(empty) == 0


def test_bad_batches_and_states_are_refused_with_the_reason():
    buffer = FrameReplayBuffer(8)
    with pytest.raises(ValueError, match="not a Dict/Tuple observation"):
        buffer.add({"a": np.zeros((1, 2, 3))}, [0], [0.0], {"a": np.zeros((1, 2, 3))}, [False])
    with pytest.raises(ValueError, match=r"stacked frames \(num_envs, frames"):
        buffer.add(np.zeros(2), [0, 1], [0.0, 0.0], np.zeros(2), [False, False])
    stream = StackedStream(num_envs=2, seed=8)
    buffer.add(*stream.step())
    other = np.zeros((2, 4, 3, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"frames of shape \(3, 3\)"):
        buffer.add(other, [0, 1], [0.0, 0.0], other, [False, False])
    state = buffer.state_dict()
    state["buffer"]["data"]["obs_ref"] = state["buffer"]["data"]["obs_ref"] + 100
    with pytest.raises(checkpoints.CheckpointError, match=r"memory\.buffer\.data\.obs_ref"):
        FrameReplayBuffer(8).load_state_dict(state)
    with pytest.raises(checkpoints.CheckpointError, match="memory"):
        FrameReplayBuffer(8).load_state_dict(ReplayBuffer(8).state_dict())


def test_the_manifest_field_selects_the_buffer_and_prioritised_replay_refuses_it():
    memory, n_step = build_replay_buffers(ReplayBufferSpec(storage="frames"), DQNSpec())
    assert type(memory) is FrameReplayBuffer and n_step is None
    assert type(Replay.of(memory)) is Replay  # uniform replay, as a plain buffer's
    # a cohort writes a plain buffer's rows itself: its agents train one at a time
    assert FrameReplayBuffer not in LOCKSTEP_REPLAYS
    plain, _ = build_replay_buffers(ReplayBufferSpec(), DQNSpec())
    assert type(plain) is ReplayBuffer
    with pytest.raises(ValueError, match=r"replay_buffer\.storage: 'frames'"):
        build_replay_buffers(ReplayBufferSpec(storage="frames", per_buffer=True), RainbowDQNSpec())


def test_beside_an_n_step_buffer_the_main_buffer_reads_as_a_plain_one():
    """RainbowDQN's n-step buffer hands the main buffer the 1-step rows it releases."""
    plain = Replay.of(ReplayBuffer(30), NStepReplayBuffer(30, n_step=3, gamma=0.9))
    frames = Replay.of(FrameReplayBuffer(30), NStepReplayBuffer(30, n_step=3, gamma=0.9))
    stream = StackedStream(num_envs=2, seed=9)
    for step in range(25):
        obs, action, reward, next_obs, done = stream.step()
        truncated = np.full(2, step % 11 == 10)
        for replay in (plain, frames):
            replay.add(obs, action, reward, next_obs, done, truncated)
    _assert_same(plain.memory, frames.memory)
