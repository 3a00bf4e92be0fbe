"""ReplayBuffer: ring order and wrap-around, nested observations, sampling, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agilerl.components.replay_buffer import FIELDS, ReplayBuffer
from agilerl.files import checkpoints


def _batch(ids, obs_dim=3):
    """Transitions whose every field encodes its id, so a sampled row can be checked."""
    ids = np.asarray(ids)
    obs = np.repeat(ids[:, None], obs_dim, axis=1).astype(np.float32)
    return obs, ids.astype(np.int64), ids * 0.5, obs + 1000.0, ids % 2 == 0


def _stored_ids(buffer):
    """Ids held in each slot, in slot order."""
    return buffer.state_dict()["data"]["action"].tolist()


def _assert_rows_consistent(sample):
    ids = sample["action"]
    assert torch.equal(sample["obs"], ids[:, None].float().expand(-1, 3))
    assert torch.equal(sample["next_obs"], sample["obs"] + 1000.0)
    assert torch.equal(sample["reward"], ids.double() * 0.5)
    assert torch.equal(sample["done"], ids % 2 == 0)


def test_fills_then_wraps_around_overwriting_the_oldest():
    buffer = ReplayBuffer(5)
    buffer.add(*_batch([0, 1, 2]))
    assert (len(buffer), buffer.position) == (3, 3)
    assert _stored_ids(buffer) == [0, 1, 2]
    buffer.add(*_batch([3, 4, 5]))  # wraps: 3, 4 at the end, 5 in slot 0
    assert (len(buffer), buffer.position) == (5, 1)
    assert _stored_ids(buffer) == [5, 1, 2, 3, 4]
    buffer.add(*_batch([6, 7, 8, 9, 10, 11, 12]))  # larger than the buffer
    assert (len(buffer), buffer.position) == (5, 3)
    assert _stored_ids(buffer) == [10, 11, 12, 8, 9]
    assert buffer.max_size == 5


def test_storage_is_preallocated_once_with_the_first_batch_dtypes():
    buffer = ReplayBuffer(4)
    buffer.add(*_batch([0, 1]))
    storage = buffer._storage
    pointers = {name: storage[name].data_ptr() for name in FIELDS}
    assert storage["obs"].shape == (4, 3)
    dtypes = {name: storage[name].dtype for name in FIELDS}
    assert dtypes == {
        "obs": torch.float32,
        "action": torch.int64,
        "reward": torch.float64,
        "next_obs": torch.float32,
        "done": torch.bool,
    }
    buffer.add(*_batch([2, 3, 4]))
    assert {name: buffer._storage[name].data_ptr() for name in FIELDS} == pointers


def test_samples_uniformly_from_the_filled_part_only():
    buffer = ReplayBuffer(100)
    buffer.add(*_batch([7, 8, 9]))
    torch.manual_seed(0)
    sample = buffer.sample(600)
    assert set(sample["action"].tolist()) == {7, 8, 9}
    counts = np.bincount(sample["action"].numpy() - 7)
    assert counts.min() > 150  # ~200 each
    _assert_rows_consistent(sample)


def test_sample_shapes_device_and_reproducibility():
    buffer = ReplayBuffer(50, device="cpu")
    buffer.add(*_batch(np.arange(20)))
    torch.manual_seed(3)
    first = buffer.sample(16)
    torch.manual_seed(3)
    again = buffer.sample(16)
    assert set(first) == set(FIELDS)
    shapes = {name: tuple(t.shape) for name, t in first.items()}
    assert shapes == {
        "obs": (16, 3),
        "action": (16,),
        "reward": (16,),
        "next_obs": (16, 3),
        "done": (16,),
    }
    assert all(t.device == torch.device("cpu") for t in first.values())
    assert all(torch.equal(first[name], again[name]) for name in FIELDS)
    _assert_rows_consistent(first)
    # A sample is a copy: writing to it leaves the buffer alone.
    first["obs"].zero_()
    assert buffer.state_dict()["data"]["obs"].abs().sum() > 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_storage_and_samples_live_on_the_buffer_device():
    buffer = ReplayBuffer(10, device="cuda")
    buffer.add(*_batch([0, 1, 2]))
    sample = buffer.sample(4)
    assert all(t.device.type == "cuda" for t in sample.values())
    assert all(t.device.type == "cpu" for t in buffer.state_dict()["data"].values())


def _nested(ids):
    ids = np.asarray(ids)
    obs = {
        "image": np.broadcast_to(ids[:, None, None, None], (len(ids), 1, 2, 2)).astype(np.uint8),
        "pair": (ids.astype(np.float32), np.stack([ids, -ids], axis=1)),
    }
    next_obs = {"image": obs["image"] + 1, "pair": (obs["pair"][0] + 1, obs["pair"][1] + 1)}
    return obs, ids, ids.astype(np.float32), next_obs, np.zeros(len(ids), dtype=bool)


def test_dict_and_tuple_observations_store_every_leaf():
    buffer = ReplayBuffer(6)
    buffer.add(*_nested([0, 1, 2, 3]))
    buffer.add(*_nested([4, 5, 6]))  # wraps
    assert len(buffer) == 6
    torch.manual_seed(1)
    sample = buffer.sample(32)
    obs, next_obs, ids = sample["obs"], sample["next_obs"], sample["action"]
    assert set(obs) == {"image", "pair"} and isinstance(obs["pair"], tuple)
    assert obs["image"].shape == (32, 1, 2, 2) and obs["image"].dtype == torch.uint8
    assert obs["pair"][0].shape == (32,) and obs["pair"][1].shape == (32, 2)
    assert torch.equal(obs["image"][:, 0, 0, 0].long(), ids)
    assert torch.equal(obs["pair"][1][:, 1], -ids)
    assert torch.equal(next_obs["pair"][0], obs["pair"][0] + 1)
    assert set(ids.tolist()) <= {1, 2, 3, 4, 5, 6}  # id 0 was overwritten


def test_state_dict_round_trip_continues_identically(tmp_path):
    for filled in ([0, 1, 2], list(range(11))):  # partly filled; full after a wrap
        buffer = ReplayBuffer(8)
        for start in range(0, len(filled), 3):
            buffer.add(*_batch(filled[start : start + 3]))
        state = buffer.state_dict()
        assert state["data"]["obs"].shape[0] == len(buffer)  # only the filled part
        assert state["data"]["obs"].device == torch.device("cpu")
        path = checkpoints.save(state, tmp_path / "buffer.ckpt")
        restored = ReplayBuffer(8)
        restored.load_state_dict(checkpoints.load(path))
        assert (len(restored), restored.position) == (len(buffer), buffer.position)
        for target in (buffer, restored):
            target.add(*_batch([100, 101, 102, 103]))
        assert _stored_ids(restored) == _stored_ids(buffer)
        torch.manual_seed(5)
        expected = buffer.sample(20)
        torch.manual_seed(5)
        got = restored.sample(20)
        assert all(torch.equal(expected[name], got[name]) for name in FIELDS)


def test_nested_and_empty_state_dicts_round_trip():
    buffer = ReplayBuffer(4)
    buffer.add(*_nested([0, 1, 2, 3, 4]))
    restored = ReplayBuffer(4)
    restored.load_state_dict(buffer.state_dict())
    torch.manual_seed(0)
    expected = buffer.sample(8)
    torch.manual_seed(0)
    got = restored.sample(8)
    assert torch.equal(expected["obs"]["pair"][1], got["obs"]["pair"][1])
    assert torch.equal(expected["next_obs"]["image"], got["next_obs"]["image"])
    empty = ReplayBuffer(4)
    empty.load_state_dict(ReplayBuffer(4).state_dict())
    assert len(empty) == 0


def test_clear_forgets_transitions_and_shapes():
    buffer = ReplayBuffer(4)
    buffer.add(*_batch([0, 1]))
    buffer.clear()
    assert (len(buffer), buffer.position) == (0, 0)
    buffer.add(*_batch([5], obs_dim=7))  # a new shape is fine after clear()
    assert buffer.sample(2)["obs"].shape == (2, 7)


def test_misuse_is_reported():
    with pytest.raises(ValueError, match="max_size"):
        ReplayBuffer(0)
    buffer = ReplayBuffer(4)
    with pytest.raises(ValueError, match="empty"):
        buffer.sample(2)
    obs, action, reward, next_obs, done = _batch([0, 1])
    with pytest.raises(ValueError, match="same length"):
        buffer.add(obs, action[:1], reward, next_obs, done)
    with pytest.raises(ValueError, match="leading batch"):
        buffer.add(obs, action, 1.0, next_obs, done)
    buffer.add(obs, action, reward, next_obs, done)
    with pytest.raises(ValueError, match="shape"):
        buffer.add(*_batch([2], obs_dim=5))
    with pytest.raises(ValueError, match="max_size"):
        ReplayBuffer(8).load_state_dict(buffer.state_dict())


def test_store_returns_the_slots_written_and_sample_from_indices_reads_them():
    buffer = ReplayBuffer(5)
    rows = dict(zip(FIELDS, _batch([0, 1, 2, 3]), strict=True))
    assert buffer.store(rows).tolist() == [0, 1, 2, 3]
    rows = dict(zip(FIELDS, _batch([4, 5, 6]), strict=True))
    assert buffer.store(rows).tolist() == [4, 0, 1]  # wraps around
    rows = dict(zip(FIELDS, _batch(np.arange(10, 17)), strict=True))
    assert buffer.store(rows).tolist() == [4, 0, 1, 2, 3]  # only the last 5 rows are kept
    sample = buffer.sample_from_indices(torch.tensor([3, 4, 4]))
    assert sample["action"].tolist() == [16, 12, 12]
    _assert_rows_consistent(sample)
    assert buffer.sample_from_indices(np.array([0]))["action"].tolist() == [13]
    for indices, match in (
        ([5], r"\[0, 5\)"),
        ([-1], r"\[0, 5\)"),
        ([[0]], "1-D"),
        ([0.5], "integer"),
    ):
        with pytest.raises(ValueError, match=match):
            buffer.sample_from_indices(indices)
    with pytest.raises(ValueError, match="exactly the fields"):
        buffer.store({"obs": rows["obs"]})
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(3).sample_from_indices([0])
