"""What a selection strategy decides for each slot of the next generation: a
:class:`Placement`, computed from the slots' fitness and indices alone, so that a
population split over processes decides it on every rank alike
(:func:`agilerl.training.evolution.next_generation` carries it out)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """The agent of one slot of the next generation."""

    #: The slot of the current generation whose agent it is a copy of.
    parent: int
    #: Its population index: the parent's for an agent carried forward, else a fresh one.
    index: int
    #: Why the mutation step leaves it alone (recorded as its ``mut``: ``None (elite)``);
    #: None where it may be mutated.
    unchanged: str | None = None
    #: The slot whose mutable hyperparameters it takes on after the copy (a migrant that
    #: brings its weights alone); None to keep its parent's.
    hyperparameters_from: int | None = None
