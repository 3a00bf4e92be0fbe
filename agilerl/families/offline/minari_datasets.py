"""Offline datasets from Minari: a dataset already in the local Minari data directory,
read episode by episode into the columns of a dataset file and checked as one
(:func:`agilerl.families.offline.datasets.checked_dataset`).

Nothing is downloaded at run time: a dataset that is not there is refused, naming the
directory looked in and the command that fetches it (``minari download ID``).
A dataset stored as HDF5 (minari's default) is checked from its file's headers before
minari reads it (:func:`check_hdf5_file`); one stored as Arrow is read by minari as is.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from agilerl.families.offline.datasets import (
    DatasetError,
    OfflineDataset,
    _h5py,
    check_declared_size,
    check_node,
    checked_dataset,
    open_hdf5,
)
from agilerl.resources.distribution import install_command

#: Where Minari keeps its datasets when MINARI_DATASETS_PATH is unset (minari 0.5).
DEFAULT_ROOT = Path("~/.minari/datasets")
#: The file of a dataset minari stores as HDF5 (its default format), in its data folder.
HDF5_FILE = "main_data.hdf5"


def minari_root() -> Path:
    """The local Minari data directory, resolved as minari resolves it, without
    creating it (minari's own lookup makes the directory as a side effect)."""
    given = os.environ.get("MINARI_DATASETS_PATH")
    return Path(given) if given is not None else DEFAULT_ROOT.expanduser()


def fetch_command(dataset_id: str) -> str:
    """The shell command that puts ``dataset_id`` in the local data directory."""
    return f"minari download {dataset_id}"


def _minari() -> Any:
    try:
        import minari
    except ImportError:
        raise DatasetError(
            f"Minari datasets are read with minari: {install_command('offline')}"
        ) from None
    return minari


def _columns(episode: Any, where: str) -> dict[str, np.ndarray]:
    """One episode as rows of transitions: ``observations`` holds the episode's T + 1
    observations (its last one where it ended, terminated or cut), so row i goes from
    observation i to observation i + 1."""
    observations = episode.observations
    if not isinstance(observations, np.ndarray):
        raise DatasetError(
            f"{where}: episode {episode.id} has {type(observations).__name__} observations; "
            "offline datasets hold Box observations (one array per step)"
        )
    columns = {
        "observations": observations[:-1],
        "actions": np.asarray(episode.actions),
        "rewards": np.asarray(episode.rewards),
        "next_observations": observations[1:],
        "terminals": np.asarray(episode.terminations),
        "truncations": np.asarray(episode.truncations),
    }
    for key, array in columns.items():
        if array.dtype.kind not in "biuf":
            raise DatasetError(
                f"{where}: episode {episode.id}: '{key}' has dtype {array.dtype}; it needs numbers"
            )
    return columns


def check_hdf5_file(path: Path, where: str) -> None:
    """Refuse, before minari reads any array of its HDF5 file ``path``, what a dataset
    file is refused for: a link or an array this h5py cannot decode
    (:func:`~agilerl.families.offline.datasets.check_node`), an object reached by more
    than one path (minari would read it once per path), or arrays whose declared shapes
    would allocate more than this process may
    (:func:`~agilerl.families.offline.datasets.check_declared_size`): minari reads every
    array of every episode whole. Headers only: no rows are read."""
    h5py = _h5py()
    with open_hdf5(path, where) as file:
        names: list[str] = []
        file.visititems_links(lambda name, _link: names.append(name))
        arrays = {}
        for name in names:
            check_node(h5py, file, name, where)
            node = file[name]
            if h5py.h5o.get_info(node.id).rc > 1:
                raise DatasetError(
                    f"{where}: key '{name}' is linked from more than one place; minari "
                    "writes each array once"
                )
            if isinstance(node, h5py.Dataset):
                arrays[name] = node
        check_declared_size(arrays, where)


def load_minari_dataset(
    dataset_id: str,
    observation_space: spaces.Space | None = None,
    action_space: spaces.Space | None = None,
    env_name: str = "the evaluation environment",
) -> OfflineDataset:
    """The transitions of the local Minari dataset ``dataset_id``, checked (with the
    spaces given) against the evaluation environment's spaces, as a dataset file is.

    Raises :class:`DatasetError`: minari not installed (naming the extra), the dataset
    not in :func:`minari_root` (naming the command that fetches it), one minari cannot
    read, or transitions a dataset file could not hold either.
    """
    minari = _minari()
    root = minari_root()
    data = root / dataset_id / "data"
    if not data.is_dir():
        raise DatasetError(
            f"{dataset_id}: not in the local Minari data directory {root} (MINARI_DATASETS_PATH, "
            f"else {DEFAULT_ROOT}); nothing is downloaded at run time: fetch it first with "
            f"`{fetch_command(dataset_id)}`"
        )
    where = f"{dataset_id} ({data})"
    if (data / HDF5_FILE).is_file():
        check_hdf5_file(data / HDF5_FILE, f"{dataset_id} ({data / HDF5_FILE})")
    try:
        dataset = minari.MinariDataset(data)
        episodes = [_columns(episode, where) for episode in dataset.iterate_episodes()]
    except DatasetError:
        raise
    except Exception as err:  # minari's own errors: a broken or foreign directory
        raise DatasetError(
            f"{where}: minari cannot read it ({type(err).__name__}: {err})"
        ) from None
    if not episodes:
        raise DatasetError(f"{where}: the dataset holds no episodes")
    columns = {key: np.concatenate([e[key] for e in episodes]) for key in episodes[0]}
    return checked_dataset(columns, where, observation_space, action_space, env_name)
