"""The one finiteness check: data a run trains on, and figures a run reports.

Loaded data (an offline dataset's arrays, a bandit's feature table) goes through
:func:`first_bad_value` once, when it is loaded; a flag column (an offline dataset's
``terminals`` and ``truncations``) through :func:`first_bad_flag`. Each returns the first
offending value (its row, its place in the row and why), or None, and the loader raises
its own error naming the file and the column. The generation loop checks the figures
each agent reports with :func:`first_non_finite`, and :func:`json_safe` is what a figure
that is not finite becomes in a JSON file (null).

Besides NaN and infinity, a loaded value is refused above :data:`MAX_MAGNITUDE`: the
largest number whose square still fits in float32. Anything larger makes a squared loss
(a TD error, a regression) infinite at its first update, so it is as useless to train on
as infinity itself; it also covers values that only overflow once cast to float32 (1e39).

The arrays are scanned in blocks of whole rows holding about :data:`BLOCK_VALUES` values,
so the check allocates a block's worth of temporaries (a few MiB), never a second copy of
the data.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The largest magnitude a loaded value may have: sqrt of float32's largest (about
#: 1.8e19). Its square is the largest value a float32 loss can hold.
MAX_MAGNITUDE = float(np.sqrt(np.finfo(np.float32).max))
#: Values checked at once (whole rows, at least one): what the check allocates is a few
#: temporaries of this many values.
BLOCK_VALUES = 1 << 20


@dataclass(frozen=True)
class BadValue:
    """The first value of an array that cannot be trained on."""

    #: Its row (the first axis).
    row: int
    #: Its place within the row (an index into the row flattened; 0 for a 1-D array).
    column: int
    value: Any
    why: str
    #: Values per row: the element is named only where a row holds several.
    width: int = 1

    def describe(self) -> str:
        """``row 3 holds nan (not a number)``; ``row 3, element 2 holds ...`` where a row
        holds several values."""
        element = f", element {self.column}" if self.width > 1 else ""
        return f"row {self.row}{element} holds {self.value!r} ({self.why})"


def non_finite(value: Any) -> bool:
    """Whether ``value`` is a number (a Python or numpy scalar, or a 0-d array or tensor
    holding one; not a bool) that is NaN or infinite. Anything else (None, text) is no
    figure, so never a non-finite one."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a 0-d numpy array or torch tensor: its number
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        return False
    return not math.isfinite(float(value))


def first_non_finite(tree: Any, path: str = "") -> tuple[str, Any] | None:
    """The first non-finite number (:func:`non_finite`) in ``tree`` (nested mappings and
    lists of figures) as ``(dotted path, value)``; None when there is none."""
    if isinstance(tree, Mapping):
        items: Iterable[tuple[Any, Any]] = tree.items()
    elif isinstance(tree, (list, tuple)):
        items = enumerate(tree)
    else:
        return (path, tree) if non_finite(tree) else None
    for key, value in items:
        found = first_non_finite(value, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def json_safe(tree: Any) -> Any:
    """``tree`` with every non-finite number replaced by None: JSON has no NaN or
    infinity (``json.dumps`` would write the bare ``NaN`` no JSON reader accepts), and
    null says "no usable value". Write the result with ``allow_nan=False``."""
    if isinstance(tree, Mapping):
        return {key: json_safe(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [json_safe(value) for value in tree]
    return None if non_finite(tree) else tree


def _why(value: float) -> str:
    if math.isnan(value):
        return "not a number"
    if math.isinf(value):
        return "infinite"
    return f"magnitude above {MAX_MAGNITUDE:.3g}, whose square overflows float32"


def _rows(values: np.ndarray) -> np.ndarray:
    """``values`` as (rows, values per row): a view where the array allows one."""
    if values.ndim == 0:
        return values.reshape(1, 1)
    return values.reshape(values.shape[0], -1)


def _blocks(table: np.ndarray) -> Iterable[tuple[int, np.ndarray]]:
    """``(first row, block)`` over ``table``, each block whole rows of about
    :data:`BLOCK_VALUES` values."""
    step = max(1, BLOCK_VALUES // max(1, table.shape[1]))
    for start in range(0, table.shape[0], step):
        yield start, table[start : start + step]


def _first(flagged: np.ndarray, block: np.ndarray, start: int, why: Any) -> BadValue | None:
    if not flagged.any():
        return None
    row, column = (int(i) for i in np.argwhere(flagged)[0])
    value = block[row, column].item()
    return BadValue(start + row, column, value, why(value), width=block.shape[1])


def first_bad_value(values: np.ndarray, limit: float = MAX_MAGNITUDE) -> BadValue | None:
    """The first value of ``values`` (any shape; rows along the first axis) that is NaN,
    infinite or of magnitude above ``limit``; None when every one is usable. Booleans
    always are."""
    if values.dtype.kind == "b":
        return None
    if values.dtype.kind not in "iuf":
        raise TypeError(f"expected numbers, got an array of dtype {values.dtype}")
    for start, block in _blocks(_rows(values)):
        # Integers as float64: abs() of the most negative one overflows its own type.
        # NaN compares false, so it is flagged with the rest.
        numbers = block if block.dtype.kind == "f" else block.astype(np.float64)
        flagged = ~(np.abs(numbers) <= limit)
        found = _first(flagged, block, start, _why)
        if found is not None:
            return found
    return None


def first_bad_flag(values: np.ndarray) -> BadValue | None:
    """The first value of ``values`` that is neither 0 nor 1 (a done flag that is not a
    yes or a no); None when every one is."""
    if values.dtype.kind not in "biuf":
        raise TypeError(f"expected numbers, got an array of dtype {values.dtype}")
    for start, block in _blocks(_rows(values)):
        flagged = (block != 0) & (block != 1)
        found = _first(flagged, block, start, lambda _: "a flag is 0 or 1")
        if found is not None:
            return found
    return None
