"""Offline datasets are checked for values they cannot be trained on when they are
loaded (:mod:`agilerl.training.finite`): NaN, infinity, magnitudes whose square overflows float32,
done flags that are not 0 or 1. Each refusal names the file, the key and the first row."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from gymnasium import spaces
from support import ROOT

from agilerl.cli import main
from agilerl.families.offline.datasets import DatasetError, load_dataset
from agilerl.training import finite

OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = spaces.Discrete(2)
ROWS = 50


def write(path: Path, **changes: np.ndarray) -> Path:
    """A good dataset of ``ROWS`` CartPole-shaped transitions, with ``changes`` in place
    of its keys."""
    rng = np.random.default_rng(0)
    data = {
        "observations": rng.normal(size=(ROWS, 4)),
        "actions": rng.integers(2, size=ROWS),
        "rewards": np.ones(ROWS),
        "next_observations": rng.normal(size=(ROWS, 4)),
        "terminals": np.zeros(ROWS),
        "truncations": np.zeros(ROWS, dtype=bool),
        **changes,
    }
    with h5py.File(path, "w") as file:
        for key, value in data.items():
            file[key] = value
    return path


def with_value(key: str, row: int, value: float, element: int | None = None) -> np.ndarray:
    shape = (ROWS, 4) if key.endswith("observations") else (ROWS,)
    array = np.zeros(shape)
    if element is None:
        array[row] = value
    else:
        array[row, element] = value
    return array


CASES = {  # key, the array -> the end of the message
    "NaN observation": (
        "observations",
        with_value("observations", 7, np.nan, element=2),
        "key 'observations' row 7, element 2 holds nan (not a number)",
    ),
    "inf reward": (
        "rewards",
        with_value("rewards", 3, np.inf),
        "key 'rewards' row 3 holds inf (infinite)",
    ),
    "-inf reward": (
        "rewards",
        with_value("rewards", 0, -np.inf),
        "key 'rewards' row 0 holds -inf (infinite)",
    ),
    "observation scaled by 1e30": (
        "next_observations",
        with_value("next_observations", 11, 1e30, element=0),
        "key 'next_observations' row 11, element 0 holds 1e+30 (magnitude above 1.84e+19, "
        "whose square overflows float32)",
    ),
    "overflows only as float32": (
        "observations",
        with_value("observations", 49, -1e39, element=3),
        "key 'observations' row 49, element 3 holds -1e+39 (magnitude above 1.84e+19",
    ),
    "NaN action": (
        "actions",
        with_value("actions", 4, np.nan),
        "key 'actions' row 4 holds nan (not a number)",
    ),
    "terminal flag 2": (
        "terminals",
        with_value("terminals", 9, 2),
        "key 'terminals' row 9 holds 2.0 (a flag is 0 or 1)",
    ),
    "terminal flag -1": (
        "terminals",
        with_value("terminals", 1, -1).astype(np.int64),
        "key 'terminals' row 1 holds -1 (a flag is 0 or 1)",
    ),
    "truncation flag 0.5": (
        "truncations",
        with_value("truncations", 20, 0.5),
        "key 'truncations' row 20 holds 0.5 (a flag is 0 or 1)",
    ),
    "NaN terminal": (
        "terminals",
        with_value("terminals", 5, np.nan),
        "key 'terminals' row 5 holds nan (not a number)",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_a_value_that_cannot_be_trained_on_is_refused_at_its_row(tmp_path, case):
    key, array, message = CASES[case]
    path = write(tmp_path / "d.h5", **{key: array})
    with pytest.raises(DatasetError) as err:
        load_dataset(path, OBS, ACT, env_name="CartPole-v1")
    assert str(err.value).startswith(f"{path}: {message}")


def test_usable_values_and_flags_load(tmp_path):
    """The limits' own edges pass: the largest magnitude allowed, flags as booleans,
    integers and floats of 0 and 1."""
    big = with_value("observations", 0, finite.MAX_MAGNITUDE, element=1)
    flags = np.tile([0.0, 1.0], ROWS // 2)
    path = write(tmp_path / "d.h5", observations=big, terminals=flags,
                 truncations=flags.astype(np.int8))  # fmt: skip
    data = load_dataset(path, OBS, ACT)
    assert data.observations[0, 1] == np.float32(finite.MAX_MAGNITUDE)
    assert np.isfinite(np.float32(finite.MAX_MAGNITUDE) ** 2)  # what the limit is for
    assert data.terminals.tolist() == flags.tolist()


def test_the_first_bad_row_is_found_past_the_first_block(tmp_path, monkeypatch):
    """Arrays are scanned a block of whole rows at a time; the row named is the file's."""
    monkeypatch.setattr(finite, "BLOCK_VALUES", 8)  # 8 rewards, or 2 observations, a block
    path = write(tmp_path / "d.h5", rewards=with_value("rewards", 42, np.nan))
    with pytest.raises(DatasetError, match=r"key 'rewards' row 42 holds nan"):
        load_dataset(path, OBS, ACT)
    observations = with_value("observations", 45, np.inf, element=3)
    path = write(tmp_path / "d.h5", observations=observations)
    with pytest.raises(DatasetError, match=r"key 'observations' row 45, element 3 holds inf"):
        load_dataset(path, OBS, ACT)


def test_agilerl_train_refuses_a_nan_dataset_before_the_first_step(tmp_path, capsys):
    path = write(tmp_path / "nan.h5", observations=with_value("observations", 3, np.nan, 0))
    out = tmp_path / "run"
    args = ["train", str(ROOT / "configs/cqn.yaml"), "--out", str(out),
            "--set", f"environment.dataset_path={path}", "--set", "environment.num_envs=2",
            "--set", "training.max_steps=40", "--set", "training.evo_steps=20",
            "--set", "training.pop_size=2"]  # fmt: skip
    assert main(args) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1] == (
        f"agilerl: environment.dataset_path: {path}: key 'observations' row 3, element 0 "
        "holds nan (not a number)"
    )
    assert not out.exists()  # refused before anything was written
