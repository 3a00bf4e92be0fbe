"""``BanditEnv``: a labelled table as a contextual bandit.

Each step draws a row of the table (uniformly, from the environment's own seeded
generator) and shows one context per arm, an arm per class. The contexts use the
standard *disjoint* encoding of a labelled dataset: with ``K`` classes and ``d``
features, arm ``k``'s context is the row's feature vector placed in block ``k`` of a
``K * d`` vector (zeros elsewhere), so one network scoring contexts can tell the arms
apart. Pulling the row's own class pays 1, any other arm 0; the best arm always pays 1,
so the regret of a step is ``1 - reward``.

Tables (:func:`load_tables`) are local CSV files (a header row, then numbers) or
Parquet files (read with pyarrow, which the ``llm`` extra installs). A missing file,
tables whose row counts differ, a feature that is not a number or not usable
(:mod:`agilerl.training.finite`: NaN, infinite, or of a magnitude whose square overflows
float32), a targets table with more than one column or fewer than two distinct labels is
refused with a :class:`BanditTableError` naming the file and the row.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from agilerl.training.finite import first_bad_value

#: The most context values one step may build (arms x arms x features, float32): a
#: bound on the work of a step, which the disjoint encoding makes quadratic in the arms
#: (3,000 arms of 4 features would be 36 million values, 144 MB, built and scored per
#: step). 4 Mi values is 16 MiB: 1,000 arms of 4 features fit.
MAX_STEP_VALUES = 1 << 22


class BanditTableError(ValueError):
    """A features or targets table that cannot make a bandit; names the file and row."""


def _read_csv(path: Path) -> tuple[list[str], list[list[str]], int]:
    """Header, rows (as strings) and the file line of the first row. Bytes that are not
    UTF-8 and a field over the csv module's limit (:func:`csv.field_size_limit`, 131,072
    characters: no number is that long) are refused with their line."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        try:
            rows = [row for row in reader if row]
        except UnicodeDecodeError:
            data = path.read_bytes()
            # The text layer decodes in blocks: find the byte in the whole file.
            start = 0
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as whole:
                start = whole.start
            line = data[:start].count(b"\n") + 1
            raise BanditTableError(
                f"{path}:{line}: not UTF-8 text (byte 0x{data[start]:02x} at offset {start})"
            ) from None
        except csv.Error as err:
            raise BanditTableError(f"{path}:{reader.line_num}: {err}") from None
    if not rows:
        raise BanditTableError(f"{path}: empty table (expected a header row, then rows)")
    return rows[0], rows[1:], 2


def _read_parquet(path: Path) -> tuple[list[str], list[list[Any]], int]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BanditTableError(
            f"{path}: reading Parquet needs pyarrow (`pip install pyarrow`, or the llm extra)"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises its own error types for a bad file
        raise BanditTableError(f"{path}: not a readable Parquet file ({err})") from None
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(table.column_names), [list(row) for row in zip(*columns, strict=True)], 0


#: File suffix -> reader: (header, rows, number of the first row as the file counts it).
READERS = {".csv": _read_csv, ".parquet": _read_parquet, ".pq": _read_parquet}


def _rows(path: Path, what: str) -> tuple[list[str], list[list[Any]], int]:
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise BanditTableError(f"{path}: {what} must be a .csv, .parquet or .pq file")
    if not path.is_file():
        raise BanditTableError(f"{path}: {what} table not found")
    return reader(path)


def _where(path: Path, first: int, index: int) -> str:
    """A row as its file counts it: CSV lines (1-based, the header is line 1); Parquet
    rows (0-based)."""
    return f"{path}:{first + index}" if first else f"{path}: row {index}"


def _number(value: Any, where: str, column: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise BanditTableError(f"{where}: column {column!r}: {value!r} is not a number") from None


def load_tables(features: str | Path, targets: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """The feature matrix ``(n, d)`` (float32) and the class labels ``(n,)`` (any
    values: strings or numbers, one column) of two local tables; refused with a
    :class:`BanditTableError` naming the file and row otherwise."""
    f_path, t_path = Path(features), Path(targets)
    f_head, f_rows, f_first = _rows(f_path, "features")
    t_head, t_rows, t_first = _rows(t_path, "targets")
    if not f_rows:
        raise BanditTableError(f"{f_path}: no rows below the header")
    if len(f_rows) != len(t_rows):
        shorter, first, count = (
            (t_path, t_first, len(t_rows))
            if len(t_rows) < len(f_rows)
            else (f_path, f_first, len(f_rows))
        )
        raise BanditTableError(
            f"{f_path} has {len(f_rows)} rows and {t_path} {len(t_rows)}: one target per "
            f"row of features; {_where(shorter, first, count)} is the first row missing "
            "from the shorter one"
        )
    if len(t_head) != 1:
        raise BanditTableError(
            f"{t_path}: {len(t_head)} columns ({', '.join(map(str, t_head))}); the targets "
            "table has one column, the correct arm of each row"
        )
    width = len(f_head)
    # float64 first: a value that overflows float32 (1e39) is refused below, not made inf
    matrix = np.empty((len(f_rows), width), dtype=np.float64)
    for i, row in enumerate(f_rows):
        where = _where(f_path, f_first, i)
        if len(row) != width:
            raise BanditTableError(f"{where}: {len(row)} values, the header has {width}")
        matrix[i] = [_number(v, where, c) for v, c in zip(row, f_head, strict=True)]
    bad = first_bad_value(matrix)
    if bad is not None:
        raise BanditTableError(
            f"{_where(f_path, f_first, bad.row)}: column {f_head[bad.column]!r}: "
            f"{bad.value!r} is not usable ({bad.why})"
        )
    labels = []
    for i, row in enumerate(t_rows):
        if len(row) != 1 or row[0] is None or str(row[0]).strip() == "":
            raise BanditTableError(f"{_where(t_path, t_first, i)}: no target label")
        labels.append(str(row[0]).strip())
    refusal = one_arm(np.asarray(labels))
    if refusal is not None:
        raise BanditTableError(f"{t_path}: {refusal}")
    return matrix.astype(np.float32), np.asarray(labels)


def one_arm(labels: np.ndarray) -> str | None:
    """Why ``labels`` (a table's targets, or a bandit's arms) cannot make a bandit to
    train: one distinct label is one arm, always the right one, so every pull pays and
    the run reports a perfect bandit that learned nothing. None when there are two or
    more. The one check of every source of a bandit (tables, ``env=``, an entry point)."""
    distinct = np.unique(labels)
    if len(distinct) >= 2:
        return None
    return (
        f"every row has the label {distinct.tolist()[0]!r}: a bandit needs at least 2 "
        "distinct labels (one arm per label), and with one the only arm always pays"
    )


def disjoint_contexts(row: np.ndarray, arms: int) -> np.ndarray:
    """``(arms, arms * d)``: arm ``k``'s context is ``row`` in block ``k``, zeros elsewhere."""
    d = row.shape[-1]
    contexts = np.zeros((arms, arms * d), dtype=np.float32)
    for k in range(arms):
        contexts[k, k * d : (k + 1) * d] = row
    return contexts


class BanditEnv:
    """A labelled dataset as a contextual bandit (see the module docstring).

    ``features`` ``(n, d)`` numbers, ``targets`` ``(n,)`` labels of any kind: the arms
    are the distinct labels, sorted (:attr:`arms` lists them). :meth:`reset` and
    :meth:`step` return the ``(K, K * d)`` contexts of the next row drawn.
    """

    def __init__(self, features: Any, targets: Any, name: str = "BanditEnv") -> None:
        features = np.asarray(features, dtype=np.float32)
        targets = np.asarray(targets)
        if features.ndim != 2 or targets.ndim != 1 or len(features) != len(targets):
            raise ValueError(
                f"features must be (n, d) and targets (n,), got {features.shape} and "
                f"{targets.shape}"
            )
        if len(features) == 0:
            raise ValueError("a bandit needs at least one row")
        self.name = name
        self.features = features
        #: The label of each arm, in arm order.
        self.arms, self.labels = np.unique(targets, return_inverse=True)
        self.labels = self.labels.astype(np.int64).reshape(-1)
        self.num_arms = len(self.arms)
        self.context_dim = self.num_arms * features.shape[1]
        values = self.num_arms * self.context_dim
        if values > MAX_STEP_VALUES:
            raise BanditTableError(
                f"{self.num_arms:,} distinct labels make {self.num_arms:,} arms; with "
                f"{features.shape[1]:,} features each step would build and score "
                f"{self.num_arms:,} contexts of {self.context_dim:,} values ({values:,} in "
                f"all: the disjoint encoding grows with the square of the arms), more "
                f"than the {MAX_STEP_VALUES:,} a step may have"
            )
        #: One arm's context (what the agent's network scores) and the arm choice.
        self.observation_space = spaces.Box(-np.inf, np.inf, (self.context_dim,), np.float32)
        self.action_space = spaces.Discrete(self.num_arms)
        self.rng = np.random.default_rng()
        self._row = 0

    @classmethod
    def from_spec(cls, spec: Any, base_dir: str | Path = ".") -> BanditEnv:
        """From a :class:`~agilerl.models.env.BanditEnvSpec`; relative table paths
        resolve against ``base_dir`` (the manifest's directory)."""
        base = Path(base_dir)
        features, targets = load_tables(base / spec.features, base / spec.targets)
        try:
            return cls(features, targets, name=spec.name)
        except BanditTableError as err:
            raise BanditTableError(f"{base / spec.targets}: {err}") from None

    def _draw(self) -> np.ndarray:
        self._row = int(self.rng.integers(len(self.features)))
        return disjoint_contexts(self.features[self._row], self.num_arms)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """A fresh row draw (from ``seed``, when given); returns its contexts."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        return self._draw()

    @property
    def correct_arm(self) -> int:
        """The arm that pays 1 for the contexts shown last."""
        return int(self.labels[self._row])

    def step(self, action: int) -> tuple[np.ndarray, float]:
        """Pull ``action`` on the contexts shown; returns the next contexts and the
        reward (1.0 for the correct arm, else 0.0)."""
        if not 0 <= int(action) < self.num_arms:
            raise ValueError(f"action {action!r} is not an arm (0 to {self.num_arms - 1})")
        reward = float(int(action) == self.correct_arm)
        return self._draw(), reward

    def close(self) -> None:
        """Nothing to release (the tables are in memory)."""
