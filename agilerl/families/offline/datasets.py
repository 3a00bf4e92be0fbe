"""Offline datasets: transitions in a local HDF5 file, checked before any training step.

A dataset file holds one row per transition under the keys :data:`REQUIRED`
(``observations``, ``actions``, ``rewards``, ``next_observations``, ``terminals``) and
optionally ``truncations``. Every key is checked: present, a dataset (not a group), as
many rows as ``observations``, numeric, shaped for the evaluation environment's
spaces, and usable (:mod:`agilerl.training.finite`: no NaN or infinity, no magnitude whose square
overflows float32, done flags 0 or 1). A problem is a :class:`DatasetError` naming the
file, the key and the shapes, or the first row at fault. The header is checked before any
array is read (links, filters this h5py lacks, shapes that would allocate more than this
process may: :func:`check_declared_size`), and each key's dtype before its rows.
Nothing is ever downloaded: a file that is not there is refused, with how to make one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from agilerl.files.checkpoints import payload_limit, size_text
from agilerl.resources.distribution import install_command
from agilerl.training.finite import first_bad_flag, first_bad_value

#: Keys every dataset has, one row per transition.
REQUIRED = ("observations", "actions", "rewards", "next_observations", "terminals")
#: Keys a dataset may have: whether the episode was cut (a time limit) at that step.
OPTIONAL = ("truncations",)
#: Keys holding one number per transition.
PER_ROW = ("rewards", "terminals", "truncations")
#: Keys holding a done flag per transition: 0 or 1.
FLAGS = ("terminals", "truncations")

MAKE_ONE = "make one with `agilerl dataset collect ENV -o FILE --steps N`"


class DatasetError(ValueError):
    """An offline dataset that cannot be trained on; the message names file and key."""


@dataclass
class OfflineDataset:
    """The transitions of a dataset file, as numpy arrays (one row per transition)."""

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_observations: np.ndarray
    terminals: np.ndarray
    truncations: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.observations.shape[0])

    def fill(self, memory: Any) -> None:
        """Store every transition in ``memory`` (a replay buffer) once; ``done`` is
        termination, as the online loops store it (a truncated episode bootstraps)."""
        memory.add(
            self.observations, self.actions, self.rewards, self.next_observations, self.terminals
        )


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:  # pragma: no cover - the offline extra is installed in CI
        raise DatasetError(
            f"offline datasets are HDF5 files read with h5py: {install_command('offline')}"
        ) from None
    return h5py


def open_hdf5(path: str | Path, where: str) -> Any:
    """The HDF5 file at ``path``, open for reading (h5py's ``File``); a file h5py cannot
    open is a :class:`DatasetError` naming ``where``."""
    try:
        return _h5py().File(path, "r")
    except OSError as err:
        raise DatasetError(f"{where}: not a readable HDF5 file ({err})") from None


def _row_shape(space: spaces.Space, what: str, where: str) -> tuple[int, ...]:
    if isinstance(space, spaces.Box):
        return tuple(space.shape)
    if isinstance(space, spaces.Discrete):
        return ()
    if isinstance(space, spaces.MultiDiscrete):
        return tuple(space.shape)
    raise DatasetError(
        f"{where}: offline datasets hold Box observations and Discrete or MultiDiscrete "
        f"actions; the evaluation environment's {what} space is {space}"
    )


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _check_structure(h5py: Any, file: Any, where: str) -> None:
    """Refuse, before any array is read, a key that is a link or holds an array this
    h5py cannot decode (:func:`check_node`)."""
    for key in (*REQUIRED, *OPTIONAL):
        if file.get(key, getlink=True) is not None:  # missing keys are _read's to report
            check_node(h5py, file, key, where)


def check_node(h5py: Any, file: Any, key: str, where: str) -> None:
    """Refuse the member ``key`` of an open HDF5 ``file`` when it is a link (an external
    link makes h5py open another file, named by this one; a soft link points elsewhere
    in it) or an array compressed with an HDF5 filter this h5py cannot decode (it would
    fail, or need a plugin loaded from HDF5_PLUGIN_PATH, when the rows are read).
    Reads the link and the array's creation properties only."""
    link = file.get(key, getlink=True)
    if isinstance(link, h5py.ExternalLink):
        raise DatasetError(
            f"{where}: key '{key}' is an external link to {link.filename}:{link.path}; a "
            "dataset file holds its own arrays (links are not followed)"
        )
    if isinstance(link, h5py.SoftLink):
        raise DatasetError(
            f"{where}: key '{key}' is a soft link to {link.path}; a dataset file holds "
            "its arrays under their own keys (links are not followed)"
        )
    node = file[key]
    if not hasattr(node, "id") or not isinstance(node, h5py.Dataset):
        return  # a group or a named type: no rows to decode
    plist = node.id.get_create_plist()
    for i in range(plist.get_nfilters()):
        code, _, _, name = plist.get_filter(i)
        if not h5py.h5z.filter_avail(code):
            label = name.decode(errors="replace") if isinstance(name, bytes) else name
            raise DatasetError(
                f"{where}: key '{key}' is compressed with HDF5 filter {code} ({label}), "
                "which this h5py cannot decode; write the dataset with gzip, lzf or "
                "no compression"
            )


def declared_bytes(node: Any) -> int:
    """The bytes reading the HDF5 array ``node`` whole allocates, from its header alone
    (declared shape x item size): a file's size says nothing of it, since chunks never
    written read as zeros and compressed ones expand."""
    return (node.size or 0) * node.dtype.itemsize


def check_declared_size(arrays: dict[str, Any], where: str) -> None:
    """Refuse ``arrays`` (key -> HDF5 array of an open file, nothing read yet) whose
    declared shapes would allocate more, read whole, than this process may
    (:func:`agilerl.files.checkpoints.payload_limit`: half the memory available, the limit a
    checkpoint read has), naming the largest array: a 1 MB file can declare 2e9 rows."""
    limit = payload_limit()
    if limit is None or not arrays:
        return
    sizes = {key: declared_bytes(node) for key, node in arrays.items()}
    total = sum(sizes.values())
    if total <= limit:
        return
    key = max(sizes, key=sizes.__getitem__)
    shape = tuple(arrays[key].shape)
    rows = shape[0] if shape else 1
    raise DatasetError(
        f"{where}: key '{key}' declares {rows:,} rows of {_shape(shape[1:])} "
        f"{arrays[key].dtype}: reading the dataset would allocate {size_text(total)}, "
        f"more than this process may allocate ({size_text(limit)}: half the memory "
        "available); a dataset is held in memory whole: use fewer transitions"
    )


def _read(file: Any, key: str, where: str) -> np.ndarray:
    if key not in file:
        raise DatasetError(
            f"{where}: key '{key}' is missing (found: {', '.join(sorted(file)) or 'none'}); a "
            f"dataset has {', '.join(REQUIRED)} (and optionally {', '.join(OPTIONAL)})"
        )
    node = file[key]
    if not hasattr(node, "dtype"):
        raise DatasetError(f"{where}: key '{key}' is a group, not an array of transitions")
    if node.dtype.kind not in "biuf":  # from the header: text is never read
        raise DatasetError(
            f"{where}: key '{key}' has dtype {node.dtype} with shape {_shape(node.shape)}; "
            "it needs numbers"
        )
    return np.asarray(node[()])


def load_dataset(
    path: str | Path,
    observation_space: spaces.Space | None = None,
    action_space: spaces.Space | None = None,
    env_name: str = "the evaluation environment",
) -> OfflineDataset:
    """The dataset in the HDF5 file ``path``, checked (with the spaces given) against the
    evaluation environment's observation and action spaces.

    Raises :class:`DatasetError` naming the file, the key and the shapes: a missing file
    or key, a key whose rows differ in number from ``observations``, a per-transition key
    that is not one number per row, observations or actions that do not fit the spaces;
    or the first row of a key holding NaN, infinity, a magnitude above
    :data:`~agilerl.training.finite.MAX_MAGNITUDE`, or a done flag that is not 0 or 1. Keys whose
    declared shapes would allocate more than this process may are refused from the
    header, before any array is read (:func:`check_declared_size`).
    """
    where = str(path)
    if not Path(path).is_file():
        raise DatasetError(
            f"{where}: no such dataset file (environment.dataset_path names a local HDF5 "
            f"file; nothing is downloaded): {MAKE_ONE}"
        )
    h5py = _h5py()
    with open_hdf5(path, where) as file:
        _check_structure(h5py, file, where)
        keys = [key for key in (*REQUIRED, *OPTIONAL) if isinstance(file.get(key), h5py.Dataset)]
        check_declared_size({key: file[key] for key in keys}, where)
        data = {key: _read(file, key, where) for key in REQUIRED}
        if "truncations" in file:
            data["truncations"] = _read(file, "truncations", where)
    return checked_dataset(data, where, observation_space, action_space, env_name)


def checked_dataset(
    data: dict[str, np.ndarray],
    where: str,
    observation_space: spaces.Space | None = None,
    action_space: spaces.Space | None = None,
    env_name: str = "the evaluation environment",
) -> OfflineDataset:
    """The columns ``data`` (key -> array, as a dataset file holds them) checked as
    :func:`load_dataset` checks a file's, errors naming ``where``: every source of
    transitions (a file, a Minari dataset) is held to the same rules."""
    rows = data["observations"].shape[0] if data["observations"].ndim else 0
    if rows == 0:
        raise DatasetError(
            f"{where}: key 'observations' has shape {_shape(data['observations'].shape)}: the "
            "dataset holds no transitions"
        )
    for key, array in data.items():
        if array.ndim == 0 or array.shape[0] != rows:
            raise DatasetError(
                f"{where}: key '{key}' has shape {_shape(array.shape)} but 'observations' has "
                f"{_shape(data['observations'].shape)}: every key needs one row per "
                f"transition ({rows:,})"
            )
        if key in PER_ROW and array.shape != (rows,):
            raise DatasetError(
                f"{where}: key '{key}' has shape {_shape(array.shape)}; expected "
                f"{_shape((rows,))}, one number per transition"
            )
    _refuse_unusable_values(data, where)
    if observation_space is not None:
        expected = (rows, *_row_shape(observation_space, "observation", where))
        for key in ("observations", "next_observations"):
            if data[key].shape != expected:
                raise DatasetError(
                    f"{where}: key '{key}' has shape {_shape(data[key].shape)}; {env_name}'s "
                    f"observations are {_shape(expected[1:])}, so expected {_shape(expected)}"
                )
            data[key] = data[key].astype(observation_space.dtype, copy=False)
    if data["next_observations"].shape != data["observations"].shape:
        raise DatasetError(
            f"{where}: key 'next_observations' has shape "
            f"{_shape(data['next_observations'].shape)} but 'observations' has "
            f"{_shape(data['observations'].shape)}"
        )
    if action_space is not None:
        data["actions"] = _check_actions(data["actions"], action_space, rows, where, env_name)
    for key in PER_ROW:
        if key in data:
            data[key] = data[key].astype(np.float32, copy=False)
    return OfflineDataset(**data)


def _refuse_unusable_values(data: dict[str, np.ndarray], where: str) -> None:
    """Every value finite and of a magnitude float32 losses can hold, every done flag 0
    or 1 (:mod:`agilerl.training.finite`): a NaN or 1e30 trained on gives NaN losses, never an
    error of its own. Checked before any cast, so a value that only overflows as float32
    is refused too."""
    for key, array in data.items():
        bad = first_bad_value(array)
        if bad is None and key in FLAGS:
            bad = first_bad_flag(array)
        if bad is not None:
            raise DatasetError(f"{where}: key '{key}' {bad.describe()}")


def _check_actions(
    actions: np.ndarray, space: spaces.Space, rows: int, where: str, env_name: str
) -> np.ndarray:
    expected = (rows, *_row_shape(space, "action", where))
    if not isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        # _row_shape passes Box spaces (observations); actions must be discrete.
        raise DatasetError(
            f"{where}: offline datasets hold Box observations and Discrete or MultiDiscrete "
            f"actions; the evaluation environment's action space is {space}"
        )
    if actions.shape != expected:
        raise DatasetError(
            f"{where}: key 'actions' has shape {_shape(actions.shape)}; {env_name}'s actions "
            f"are {_shape(expected[1:])}, so expected {_shape(expected)}"
        )
    if actions.dtype.kind == "f" and not np.all(np.mod(actions, 1) == 0):
        raise DatasetError(
            f"{where}: key 'actions' holds fractional values; {env_name}'s actions are "
            f"integers ({space})"
        )
    actions = actions.astype(np.int64)
    low = np.broadcast_to(np.asarray(space.start), expected[1:])
    high = low + (space.n if isinstance(space, spaces.Discrete) else space.nvec)
    outside = (actions < low) | (actions >= high)
    if outside.any():
        row = int(np.argwhere(outside.reshape(rows, -1).any(axis=1))[0, 0])
        raise DatasetError(
            f"{where}: key 'actions' row {row} holds {actions[row].tolist()}, outside "
            f"{env_name}'s action space {space}"
        )
    return actions
