"""Checkpoint files: atomic writes, and damaged or foreign files refused clearly."""

import os

import pytest
import torch

from agilerl import checkpoints
from agilerl.checkpoints import CheckpointError


def test_round_trip(tmp_path):
    path = checkpoints.save({"kind": "run", "w": torch.arange(5.0)}, tmp_path / "c.pt")
    loaded = checkpoints.load(path, kind="run")
    assert torch.equal(loaded["w"], torch.arange(5.0))


def test_truncated_file_is_refused_with_a_clear_error(tmp_path):
    path = checkpoints.save({"kind": "run", "w": torch.zeros(1000)}, tmp_path / "c.pt")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="damaged checkpoint \\(truncated"):
        checkpoints.load(path)


def test_corrupted_byte_is_refused(tmp_path):
    path = checkpoints.save({"kind": "run", "w": torch.zeros(1000)}, tmp_path / "c.pt")
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="checksum mismatch"):
        checkpoints.load(path)


def test_foreign_missing_and_wrong_kind_files(tmp_path):
    other = tmp_path / "other.pt"
    torch.save({"x": 1}, other)
    with pytest.raises(CheckpointError, match="not an agilerl checkpoint"):
        checkpoints.load(other)
    with pytest.raises(CheckpointError, match="no such checkpoint"):
        checkpoints.load(tmp_path / "absent.pt")
    path = checkpoints.save({"kind": "agent"}, tmp_path / "a.pt")
    with pytest.raises(CheckpointError, match="expected a run checkpoint, found 'agent'"):
        checkpoints.load(path, kind="run")


def test_a_failed_write_leaves_the_previous_checkpoint_and_no_temp_file(tmp_path, monkeypatch):
    path = checkpoints.save({"kind": "run", "generation": 1}, tmp_path / "c.pt")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        checkpoints.save({"kind": "run", "generation": 2}, path)
    assert checkpoints.load(path)["generation"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["c.pt"]
