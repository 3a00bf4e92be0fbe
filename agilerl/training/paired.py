"""Transitional (issue 48): a family's alone turn and cohort turn joined into the one
:data:`~agilerl.training.evolution.TrainTurn` the generation loop calls, until each
family writes its turn once. Removed with the last pair."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agilerl.training.evolution import (
    EvaluateAgent,
    EvaluateTurn,
    Trained,
    TrainTurn,
    each_alone,
    one_by_one,
)
from agilerl.training.state import RunState


def paired_turn(
    train_agent: Callable[[Any, int, int, RunState], Trained],
    train_cohort: Callable[..., tuple[list[Trained], list[Any]]] | None,
    sharing: Any = None,
) -> TrainTurn:
    alone = one_by_one(train_agent, sharing)

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        if len(agents) == 1 or train_cohort is None:
            return alone(agents, slots, budget, run)
        results, journals = train_cohort(agents, slots, budget, run)
        if sharing is not None:
            for slot, own in zip(slots, journals, strict=True):
                sharing.record(slot, own)
        return results

    return train


def paired_evaluation(
    evaluate_agent: EvaluateAgent, evaluate_cohort: Callable[..., list[Any]] | None
) -> EvaluateTurn:
    alone = each_alone(evaluate_agent)

    def evaluate(agents: list[Any], slots: list[int], run: RunState) -> list[tuple[Any, ...]]:
        if len(agents) == 1 or evaluate_cohort is None:
            return alone(agents, slots, run)
        return list(evaluate_cohort(agents, slots, run))

    return evaluate
