"""Mutable RL hyperparameters: a value range and the factors a mutation scales by."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


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
