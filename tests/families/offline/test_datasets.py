"""An offline dataset is sized from its HDF5 header before any array is read: a file of
about 1 MB can declare 2e9 rows (chunks never written read as zeros), which read whole
would allocate tens of GiB. Such a file, or Minari dataset, is refused in one line
naming the file, the key, the rows declared and the bytes against the limit a
checkpoint read has (half the memory available), with nothing read and nothing big
allocated."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np
import pytest
from gymnasium import spaces
from support import ROOT
from support.minari_data import write_cartpole_dataset

from agilerl.cli import main
from agilerl.families.offline.datasets import DatasetError, load_dataset
from agilerl.families.offline.minari_datasets import load_minari_dataset
from agilerl.files import checkpoints

OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = spaces.Discrete(2)
ROWS = 2_000_000_000
#: Each key of a CartPole dataset: the shape of one row and its dtype.
KEYS = {
    "observations": ((4,), "f4"),
    "actions": ((), "i8"),
    "rewards": ((), "f4"),
    "next_observations": ((4,), "f4"),
    "terminals": ((), "f4"),
}
#: What reading the declared file whole would allocate: 48 bytes a row.
DECLARED = "96,000,000,000 bytes (89.4 GiB)"
#: Half of the 16 GiB the tests make this process see as available.
LIMIT = "8,589,934,592 bytes (8.0 GiB): half the memory available"


@pytest.fixture(autouse=True)
def sixteen_gib(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same limit on every machine: 16 GiB available, so 8 GiB a read."""
    monkeypatch.setattr(checkpoints, "available_memory", lambda: 16 << 30)


def declare_rows(path: Path, rows: int = ROWS) -> Path:
    """A chunked, resizable dataset file whose every key declares ``rows`` rows; two
    observations are written, nothing else."""
    with h5py.File(path, "w") as file:
        arrays = {
            key: file.create_dataset(
                key, shape=(rows, *row), maxshape=(None, *row), chunks=(1024, *row), dtype=dtype
            )
            for key, (row, dtype) in KEYS.items()
        }
        arrays["observations"][:2] = 1.0
    return path


@contextmanager
def nothing_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No HDF5 array read (h5py's readers fail if called) and under 16 MiB allocated
    meanwhile (numpy's arrays are traced), checked on leaving."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an HDF5 array was read")

    monkeypatch.setattr(h5py.Dataset, "__getitem__", refuse)
    monkeypatch.setattr(h5py.Dataset, "read_direct", refuse)
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak:,} bytes allocated"


def test_a_file_declaring_2e9_rows_is_refused_from_its_header_before_any_read(
    tmp_path, monkeypatch
):
    path = declare_rows(tmp_path / "huge.h5")
    assert path.stat().st_size < 4 << 20  # a small file on disk
    with nothing_read(monkeypatch), pytest.raises(DatasetError) as err:
        load_dataset(path, OBS, ACT)
    assert str(err.value) == (
        f"{path}: key 'observations' declares 2,000,000,000 rows of (4,) float32: reading the "
        f"dataset would allocate {DECLARED}, more than this process may allocate ({LIMIT}); "
        "a dataset is held in memory whole: use fewer transitions"
    )


def test_a_file_within_the_limit_still_loads(tmp_path):
    data = load_dataset(declare_rows(tmp_path / "small.h5", rows=8), OBS, ACT)
    assert len(data) == 8 and data.observations[:2].tolist() == [[1.0] * 4] * 2


def test_text_is_refused_from_the_header_without_reading_it(tmp_path, monkeypatch):
    path = declare_rows(tmp_path / "text.h5", rows=8)
    with h5py.File(path, "a") as file:
        del file["observations"]  # the first key read
        file["observations"] = np.array([b"no"] * 8)
    with nothing_read(monkeypatch), pytest.raises(DatasetError) as err:
        load_dataset(path, OBS, ACT)
    assert str(err.value) == (
        f"{path}: key 'observations' has dtype |S2 with shape (8,); it needs numbers"
    )


def test_agilerl_train_refuses_the_file_in_one_line_before_anything_is_written(tmp_path, capsys):
    path = declare_rows(tmp_path / "huge.h5")
    out = tmp_path / "run"
    args = ["train", str(ROOT / "configs/cqn.yaml"), "--out", str(out),
            "--set", f"environment.dataset_path={path}", "--set", "environment.num_envs=2",
            "--set", "training.pop_size=2"]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"agilerl: environment.dataset_path: {path}: key 'observations' declares "
        f"2,000,000,000 rows of (4,) float32: reading the dataset would allocate {DECLARED}, "
        f"more than this process may allocate ({LIMIT}); a dataset is held in memory whole: "
        "use fewer transitions"
    )
    assert not out.exists()


# --- Minari datasets (HDF5 too) ------------------------------------------------------------

DATASET = "cartpole/random-v0"


@pytest.fixture
def minari_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small Minari dataset of this test's own; returns its HDF5 file."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    write_cartpole_dataset(DATASET, 50)
    return tmp_path / "minari" / DATASET / "data" / "main_data.hdf5"


def test_a_minari_episode_declaring_2e9_rows_is_refused_before_minari_reads_it(
    minari_file, monkeypatch
):
    with h5py.File(minari_file, "a") as file:
        del file["episode_1/observations"]
        shape, maxshape = (ROWS, 4), (None, 4)
        file.create_dataset("episode_1/observations", shape, "f4", maxshape=maxshape, chunks=True)
    with nothing_read(monkeypatch), pytest.raises(DatasetError) as err:
        load_minari_dataset(DATASET, OBS, ACT)
    message = str(err.value)
    # 32e9 bytes for that array, and those of the other episodes' arrays
    assert message.startswith(
        f"{DATASET} ({minari_file}): key 'episode_1/observations' declares 2,000,000,000 rows "
        "of (4,) float32: reading the dataset would allocate 32,000,"
    )
    assert message.endswith(
        f"more than this process may allocate ({LIMIT}); a dataset is held in memory whole: "
        "use fewer transitions"
    )


def test_a_minari_array_reached_twice_or_by_a_link_is_refused(minari_file, monkeypatch):
    """A hard link makes minari read one array once per path (a file's size then says
    nothing of what it reads); soft and external links are refused as a dataset file's."""
    with h5py.File(minari_file, "a") as file:
        del file["episode_1/observations"]
        file["episode_1/observations"] = file["episode_0/observations"]
    with nothing_read(monkeypatch), pytest.raises(DatasetError) as err:
        load_minari_dataset(DATASET, OBS, ACT)
    assert str(err.value) == (
        f"{DATASET} ({minari_file}): key 'episode_0/observations' is linked from more than "
        "one place; minari writes each array once"
    )
    with h5py.File(minari_file, "a") as file:
        del file["episode_1/observations"]
        file["episode_1/observations"] = h5py.SoftLink("/episode_0/observations")
    with pytest.raises(DatasetError, match=r"key 'episode_1/observations' is a soft link to"):
        load_minari_dataset(DATASET, OBS, ACT)
