"""Callbacks: the user's code at a run's evaluation and generation ends.

``LocalTrainer.train(callbacks=[...])`` (and every training function's ``callbacks=``)
takes :class:`Callback` objects; override the hooks you need. Each is called from the
loop (:func:`~agilerl.training.evolution.evolve`), for every family alike:

* :meth:`Callback.on_evaluation` after each agent's evaluation, with the agent, its
  record of the generation (fitness, training score, metrics, hyperparameters, what
  mutated) and the run state, in the process that trains the agent;
* :meth:`Callback.on_generation` once a generation's records are in (``state.history[-1]``),
  on rank 0, before the run decides whether to stop: returning ``False`` stops the run
  there (``state.finished == "callback"``), with its outputs and final checkpoint written
  as for any other end.

A callback that raises ends the run with its error, as the user's other code does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agilerl.training.state import RunState


class Callback:
    """Hooks of a training run (module docstring); each does nothing unless overridden."""

    def on_evaluation(self, agent: Any, record: dict[str, Any], state: RunState) -> None:
        """``agent`` was just evaluated; ``record`` is its record of the generation."""

    def on_generation(self, state: RunState) -> bool | None:
        """A generation ended (its record: ``state.history[-1]``). ``False`` stops the run."""
        return None


def stop_requested(callbacks: Sequence[Callback], state: RunState) -> bool:
    """Call every callback's :meth:`~Callback.on_generation` (all of them, in order, even
    after one asks to stop); whether any returned ``False``."""
    answers = [callback.on_generation(state) for callback in callbacks]
    return any(answer is False for answer in answers)
