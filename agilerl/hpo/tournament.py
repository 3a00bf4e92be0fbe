"""Tournament selection: the next generation is drawn from the fittest agents."""

from __future__ import annotations

from typing import Any

import numpy as np

from agilerl import checkpoints
from agilerl.algorithms.core.protocols import AgentT


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
        cls, spec: Any, population_size: int, rand_seed: int | None = None
    ) -> TournamentSelection:
        return cls(spec.tournament_size, spec.elitism, population_size, rand_seed)

    def plan(self, fitness: list[float], indices: list[int]) -> list[tuple[int, int]]:
        """The next generation as ``(parent slot, index)`` per slot, from the latest
        ``fitness`` and population ``indices`` of every slot alone: a population split
        over processes decides it on every rank alike and moves only the agents whose
        parent lives elsewhere. The elite (slot 0, with ``elitism``) keeps its index;
        every other clone gets a fresh one, increasing."""
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
                plan.append((source, indices[source]))
            else:
                plan.append((source, next_index))
                next_index += 1
        return plan

    def select(self, population: list[AgentT]) -> tuple[AgentT, list[AgentT]]:
        """``(elite, next_generation)``: clones with fresh, increasing indices."""
        fitness = [agent.fitness[-1] if agent.fitness else -np.inf for agent in population]
        plan = self.plan(fitness, [agent.index for agent in population])
        new_population = [population[source].clone(index=index) for source, index in plan]
        best = population[int(np.argmax(fitness))]
        return new_population[0] if self.elitism else best, new_population

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any], where: str = "") -> None:
        """Restore the generator :meth:`state_dict` saved (checked first)."""
        checkpoints.require(state, {"rng": dict}, where)
        self.rng = checkpoints.generator_from_state(state["rng"], checkpoints.join(where, "rng"))
