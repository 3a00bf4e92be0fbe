"""Tournament selection: the next generation is drawn from the fittest agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from agilerl.algorithms.core.protocols import AgentT
from agilerl.files import checkpoints
from agilerl.hpo.placement import Placement

if TYPE_CHECKING:  # types only
    from agilerl.models import TournamentSelectionSpec


class TournamentSelection:
    """Pick each slot of the next generation by a tournament of ``tournament_size``
    agents drawn uniformly (with replacement); the fittest of them is cloned into the
    slot. With ``elitism`` slot 0 holds a clone of the fittest agent of all, which the
    mutation step then leaves unchanged. Fitness is each agent's latest evaluation."""

    def __init__(
        self,
        tournament_size: int,
        elitism: bool,
        population_size: int,
        rand_seed: int | None = None,
    ) -> None:
        if tournament_size < 1:
            raise ValueError(f"tournament_size must be at least 1, got {tournament_size}")
        self.tournament_size = int(tournament_size)
        self.elitism = bool(elitism)
        self.population_size = int(population_size)
        self.rng = np.random.default_rng(rand_seed)

    @classmethod
    def from_spec(
        # Any: reached through selection_class's table with either strategy's spec (a
        # pairing of spec and class the checker cannot follow); it is a TournamentSelectionSpec.
        cls,
        spec: Any,
        population_size: int,
        rand_seed: int | None = None,
    ) -> TournamentSelection:
        return cls(spec.tournament_size, spec.elitism, population_size, rand_seed)

    @staticmethod
    def problems(spec: TournamentSelectionSpec, population_size: int) -> list[str]:
        """What makes ``spec`` (a TournamentSelectionSpec) unusable on a population of
        ``population_size``: one ``field: value: why`` line each."""
        size = spec.tournament_size
        if population_size > 1 and size > population_size:
            return [
                f"selection_strategy.tournament_size: {size:,} is more than training.pop_size "
                f"({population_size:,}): tournaments draw their entrants from the population "
                "with replacement, so the next generation would be clones of the fittest "
                "agent alone; use at most pop_size"
            ]
        return []

    @staticmethod
    def working_memory(spec: TournamentSelectionSpec) -> tuple[str, str, int] | None:
        """What a selection allocates that its spec decides, as the pre-flight counts it
        (field, what, bytes): each slot's tournament draws its entrants' indices at once."""
        size = spec.tournament_size
        return (
            "selection_strategy.tournament_size",
            f"tournaments of {size:,} entrants (8 B each)",
            8 * size,
        )

    def plan(self, fitness: list[float], indices: list[int]) -> list[Placement]:
        """The next generation, slot by slot, from the latest ``fitness`` and population
        ``indices`` of every slot alone. The elite (slot 0, with ``elitism``) keeps its
        index and is not mutated; every other clone gets a fresh index, increasing."""
        scores = np.array(fitness, dtype=float)
        best = int(np.argmax(scores))  # first of equals: deterministic
        next_index = max(indices) + 1
        chosen: list[int] = [best] if self.elitism else []
        while len(chosen) < self.population_size:
            entrants = self.rng.integers(len(scores), size=self.tournament_size)
            chosen.append(int(max(entrants, key=lambda i: (scores[i], -i))))
        plan = []
        for slot, source in enumerate(chosen):
            if slot == 0 and self.elitism:
                # The elite keeps its index: it is the same agent carried forward.
                plan.append(Placement(source, indices[source], unchanged="elite"))
            else:
                plan.append(Placement(source, next_index))
                next_index += 1
        return plan

    def select(self, population: list[AgentT]) -> tuple[AgentT, list[AgentT]]:
        """``(elite, next_generation)``: clones with fresh, increasing indices."""
        fitness = [agent.fitness[-1] if agent.fitness else -np.inf for agent in population]
        plan = self.plan(fitness, [agent.index for agent in population])
        new_population = [population[p.parent].clone(index=p.index) for p in plan]
        best = population[int(np.argmax(fitness))]
        return new_population[0] if self.elitism else best, new_population

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any], where: str = "") -> None:
        """Restore the generator :meth:`state_dict` saved (checked first)."""
        checkpoints.require(state, {"rng": dict}, where)
        self.rng = checkpoints.generator_from_state(state["rng"], checkpoints.join(where, "rng"))
