"""The limits of an algorithm's numeric hyperparameters, as its schema declares them.

Read from the generated spec classes (whose field constraints come from ``schemas/``),
so the limits are written once, in the schema. Two users: the manifest, which refuses a
``mutation.rl_hp_selection`` range outside them (mirroring the manifest schema's
per-algorithm ``if``/``then`` clauses, see ``codegen/lint.py``), and the engine, which
narrows every mutation range to them (:mod:`agilerl.algorithms.hyperparameters`).

A manifest bounds some hyperparameters further, where the algorithm specs (AgileRL's
API) leave them open and no machine could run the value: its schema's ``algorithm``
section declares them (``batch_size`` at most 10**9, as ``replay_buffer.max_size``), and
:func:`manifest_limits` adds them to the spec's.

A hyperparameter is mutable when its field is a plain number or integer: not nullable,
not a boolean, not an enum.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import annotated_types
from pydantic import BaseModel


def _show(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _number(bound: object) -> float:
    """A bound of a generated field as a number.

    ``annotated_types`` types a bound as anything comparable; the generated fields' bounds
    come from JSON Schema ``minimum``/``maximum`` (and their exclusive forms), so numbers.
    """
    if isinstance(bound, bool) or not isinstance(bound, int | float):
        raise TypeError(f"a schema bound must be a number, not {bound!r}")
    return bound


@dataclass(frozen=True)
class Limits:
    """The values one numeric hyperparameter may take."""

    low: float = -math.inf
    high: float = math.inf
    integer: bool = False
    #: The bounds as written (``>= 1``, ``< 0.5``), for messages.
    written: tuple[str, ...] = ()

    @classmethod
    def from_field(cls, annotation: object, metadata: Sequence[object]) -> Limits | None:
        """From a generated field; None when it is not a plain number or integer."""
        if annotation not in (int, float):
            return None
        integer = annotation is int
        low: float = -math.inf
        high: float = math.inf
        written: list[str] = []
        for item in metadata:
            if isinstance(item, annotated_types.Ge):
                low = max(low, _number(item.ge))
                written.append(f">= {_show(_number(item.ge))}")
            elif isinstance(item, annotated_types.Gt):  # the least value above the bound
                gt = _number(item.gt)
                low = max(low, math.floor(gt) + 1 if integer else math.nextafter(gt, math.inf))
                written.append(f"> {_show(gt)}")
            elif isinstance(item, annotated_types.Le):
                high = min(high, _number(item.le))
                written.append(f"<= {_show(_number(item.le))}")
            elif isinstance(item, annotated_types.Lt):
                lt = _number(item.lt)
                high = min(high, math.ceil(lt) - 1 if integer else math.nextafter(lt, -math.inf))
                written.append(f"< {_show(lt)}")
        return cls(low, high, integer, tuple(written))

    def problem(self, value: float) -> str | None:
        """Why ``value`` is not a value of this hyperparameter; None when it is."""
        if self.integer and type(value) is not int and not float(value).is_integer():
            return "must be an integer"
        if not self.low <= value <= self.high:
            return f"must be {' and '.join(self.written)}"
        return None

    def at_most(self, ceiling: float) -> Limits:
        """These limits with ``ceiling`` as the highest value, where it is lower."""
        if ceiling >= self.high:
            return self
        return dataclasses.replace(
            self, high=ceiling, written=(*self.written, f"<= {_show(ceiling)}")
        )

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        return f"{kind} {' and '.join(self.written)}".rstrip()


@cache
def hyperparameter_limits(spec_cls: type[BaseModel]) -> dict[str, Limits]:
    """Mutable hyperparameter name -> its limits, for an algorithm spec class."""
    found = {
        name: Limits.from_field(field.annotation, field.metadata)
        for name, field in spec_cls.model_fields.items()
    }
    return {name: limits for name, limits in found.items() if limits is not None}


@cache
def manifest_ceilings() -> dict[str, float]:
    """The highest value of each algorithm hyperparameter a manifest bounds beyond its
    spec: the ``maximum`` of each property of the manifest schema's ``algorithm``
    section (``batch_size``: 10**9, what no machine runs)."""
    text = (resources.files("agilerl") / "schemas" / "manifest.schema.json").read_text("utf-8")
    properties = json.loads(text)["properties"]["algorithm"]["properties"]
    return {name: prop["maximum"] for name, prop in properties.items() if "maximum" in prop}


@cache
def manifest_limits(spec_cls: type[BaseModel]) -> dict[str, Limits]:
    """:func:`hyperparameter_limits` with the manifest's ceilings (:func:`manifest_ceilings`):
    the values a manifest's algorithm section and ``mutation.rl_hp_selection`` may hold."""
    ceilings = manifest_ceilings()
    return {
        name: limits.at_most(ceilings[name]) if name in ceilings else limits
        for name, limits in hyperparameter_limits(spec_cls).items()
    }
