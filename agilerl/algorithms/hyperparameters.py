"""Mutable RL hyperparameters: a value range and the factors a mutation scales by."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from agilerl.models.limits import Limits


@dataclass(frozen=True)
class RLParameter:
    """Range of one mutable hyperparameter. A mutation multiplies the value by
    ``grow_factor`` or ``shrink_factor`` (even odds) and clips it to ``[min, max]``;
    integer hyperparameters stay integers (rounded, and moved by at least one)."""

    min: float
    max: float
    grow_factor: float = 1.2
    shrink_factor: float = 0.8

    def mutate(self, value: Any, rng: np.random.Generator) -> Any:
        grow = bool(rng.random() < 0.5)
        new = value * (self.grow_factor if grow else self.shrink_factor)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            step = int(round(new))
            if step == value:  # small integers would never move otherwise
                step = value + (1 if grow else -1)
            return int(min(max(step, int(np.ceil(self.min))), int(np.floor(self.max))))
        return float(min(max(new, self.min), self.max))

    def within(self, limits: Limits) -> RLParameter:
        """This range narrowed to what the hyperparameter allows, so a mutation stays
        inside both (an integer range also to whole numbers: ``min: 0`` for
        ``batch_size`` becomes 1). Raises ValueError when nothing is left."""
        low, high = max(self.min, limits.low), min(self.max, limits.high)
        if limits.integer:
            low, high = math.ceil(low), math.floor(high)
        if not low <= high:
            raise ValueError(
                f"range [{self.min:g}, {self.max:g}] holds no allowed value ({limits.describe()})"
            )
        return RLParameter(low, high, self.grow_factor, self.shrink_factor)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def default_range(value: Any) -> RLParameter:
    """The range a hyperparameter gets when the manifest names none: floats within a
    factor of ten of their start, integers from a quarter to four times theirs."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return RLParameter(
            min=max(1, int(value) // 4), max=4 * int(value), grow_factor=1.5, shrink_factor=0.75
        )
    return RLParameter(min=float(value) / 10, max=float(value) * 10)


def parse_hp_config(raw: Any) -> dict[str, RLParameter]:
    """``hp_config`` as given to an algorithm: None, a mapping of names to
    :class:`RLParameter`, to ``{min, max, grow_factor?, shrink_factor?}`` dicts, or to
    ``RLHyperparameter`` specs (``mutation.rl_hp_selection``)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise TypeError(f"hp_config must be a mapping of hyperparameter names, got {raw!r}")
    parsed: dict[str, RLParameter] = {}
    for name, value in raw.items():
        if isinstance(value, RLParameter):
            parsed[name] = value
            continue
        if hasattr(value, "model_dump"):
            value = value.model_dump()
        if not isinstance(value, Mapping) or "min" not in value or "max" not in value:
            raise TypeError(f"hp_config.{name} must give min and max, got {value!r}")
        parsed[name] = RLParameter(**{k: float(v) for k, v in value.items()})
    return parsed


# -- constructor checks: what every algorithm refuses, said the same way ---------------------
def positive_int(name: str, value: Any) -> int:
    """``value`` as an int, or a ValueError naming ``name`` unless it is a whole number >= 1
    (``True`` is not a number here)."""
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def unit_interval(name: str, value: Any) -> float:
    """``value`` as a float, or a ValueError naming ``name`` unless it lies in [0, 1]."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return float(value)


def non_negative(name: str, value: Any) -> float:
    """``value`` as a float, or a ValueError naming ``name`` unless it is >= 0."""
    if not value >= 0.0:
        raise ValueError(f"{name} must be non-negative, got {value!r}")
    return float(value)
