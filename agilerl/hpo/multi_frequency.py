"""Multi-frequency population-based training (MF-PBT; Doulazmi et al., "Multiple-
Frequencies Population-Based Training", arXiv 2506.03225, 2025), as a selection strategy.

Plain PBT ranks the whole population every generation and copies the best over the
worst; its short horizon is greedy (learning rates collapse, diversity is lost). MF-PBT
splits the population into ``n_subpopulations`` sub-populations of equal size ``s``,
slot ``k`` in sub-population ``k // s``, and sub-population ``i`` evolves only on every
``ratios[i]``-th selection (its own counter, kept in checkpoints): fast ones chase
short-term gains, slow ones judge agents over a longer horizon. An evolving
sub-population ranks its agents by their latest fitness (ties: lower slot first) into

* **winners** (``n_winners``) and **survivors** (``n_survivors``): kept as they are;
* **open for migration** (``n_open_for_migration``): best first, each is compared with the
  best agent of the *other* sub-populations not taken yet (ranked as they stood before
  this selection); a fitter one replaces it (the pointer then moves on), an equal or
  worse one leaves it (the pointer stays). A migrant always brings its weights; it
  brings its hyperparameters only from a sub-population that evolves less often than
  the receiving one. From a faster one it takes on the receiving sub-population's best
  agent's hyperparameters instead, so a slow sub-population never imports a greedy,
  short-horizon schedule. Migrants are not mutated;
* **losers** (``n_losers``): each becomes a clone of a winner drawn uniformly from the
  strategy's seeded generator, and only these clones are mutated.

Sub-populations that do not evolve are carried forward unchanged. Bracket sizes left
unset follow from ``s``: winners ``round(s/4)``, survivors 0, open ``round(s/4)``, losers
the rest (Python's rounding, half to even, as AgileRL computes them). Unlike AgileRL,
sub-populations are the slots themselves: every placement keeps an agent in its
sub-population's slots, so no agent carries a sub-population tag and a checkpoint holds
nothing beyond the counters and the generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agilerl.files import checkpoints
from agilerl.hpo.placement import Placement

if TYPE_CHECKING:  # types only
    from agilerl.models import MultiFrequencySelectionSpec

#: The smallest population and sub-population MF-PBT can rank into its brackets.
MIN_SUBPOPULATION = 3
MIN_POPULATION = 2 * MIN_SUBPOPULATION


def default_ratios(n_subpopulations: int) -> list[int]:
    """1, then multiples of 5: ``[1, 5, 10, 15, ...]`` (AgileRL's default)."""
    return [1, *(5 * i for i in range(1, n_subpopulations))]


@dataclass(frozen=True)
class Brackets:
    """How an evolving sub-population of :attr:`size` agents is split, best first."""

    winners: int
    survivors: int
    open_for_migration: int
    losers: int

    @property
    def size(self) -> int:
        return self.winners + self.survivors + self.open_for_migration + self.losers


def resolve_brackets(
    spec: MultiFrequencySelectionSpec, population_size: int
) -> tuple[Brackets | None, list[str]]:
    """The brackets of ``spec`` (a MultiFrequencySelectionSpec) on a population of
    ``population_size``, or None and one ``field: value: why`` line per problem."""
    n = spec.n_subpopulations
    where = "selection_strategy"
    if population_size < MIN_POPULATION:
        return None, [
            f"training.pop_size: {population_size} agents are too few for multi-frequency "
            f"selection: it needs at least {MIN_POPULATION} (two sub-populations of "
            f"{MIN_SUBPOPULATION}); use tournament selection for small populations"
        ]
    if population_size % n:
        return None, [
            f"{where}.n_subpopulations: {n} does not divide training.pop_size "
            f"({population_size}): the sub-populations are of equal size"
        ]
    size = population_size // n
    if size < MIN_SUBPOPULATION:
        return None, [
            f"{where}.n_subpopulations: {n} sub-populations of training.pop_size "
            f"{population_size} hold {size} agents each; each needs at least "
            f"{MIN_SUBPOPULATION} (a winner, an agent open for migration and a loser)"
        ]
    winners = round(size / 4) if spec.n_winners is None else spec.n_winners
    survivors = 0 if spec.n_survivors is None else spec.n_survivors
    open_ = round(size / 4) if spec.n_open_for_migration is None else spec.n_open_for_migration
    losers = size - winners - survivors - open_ if spec.n_losers is None else spec.n_losers
    # round(s/4) is at least 1 for the sub-populations of 3 and more allowed here
    brackets = Brackets(winners, survivors, open_, losers)
    if brackets.losers < 1 or brackets.size != size:
        given = f"{brackets.winners}/{brackets.survivors}/{brackets.open_for_migration}/"
        return None, [
            f"{where}: winners, survivors, open for migration and losers "
            f"({given}{brackets.losers}) must be at least 1/0/1/1 and add up to the "
            f"sub-population size {size} (training.pop_size {population_size} / "
            f"n_subpopulations {n})"
        ]
    return brackets, []


class MultiFrequencySelection:
    """MF-PBT as a selection strategy (see the module docstring)."""

    def __init__(
        self,
        population_size: int,
        brackets: Brackets,
        evolution_frequency_ratios: list[int],
        rand_seed: int | None = None,
    ) -> None:
        self.population_size = int(population_size)
        self.ratios = [int(r) for r in evolution_frequency_ratios]
        self.subpopulation_size = self.population_size // len(self.ratios)
        if brackets.size != self.subpopulation_size:
            raise ValueError(
                f"brackets of {brackets.size} agents for sub-populations of "
                f"{self.subpopulation_size}"
            )
        self.brackets = brackets
        #: Selections since each sub-population last evolved.
        self.counters = [0] * len(self.ratios)
        self.rng = np.random.default_rng(rand_seed)

    @classmethod
    def from_spec(
        # Any: reached through selection_class's table with either strategy's spec (a
        # pairing of spec and class the checker cannot follow); it is a MultiFrequencySelectionSpec.
        cls,
        spec: Any,
        population_size: int,
        rand_seed: int | None = None,
    ) -> MultiFrequencySelection:
        brackets, problems = resolve_brackets(spec, population_size)
        if brackets is None:
            raise ValueError("; ".join(problems))
        ratios = spec.evolution_frequency_ratios or default_ratios(spec.n_subpopulations)
        return cls(population_size, brackets, ratios, rand_seed)

    @staticmethod
    def problems(spec: MultiFrequencySelectionSpec, population_size: int) -> list[str]:
        """What makes ``spec`` unusable on a population of ``population_size``."""
        return resolve_brackets(spec, population_size)[1]

    @staticmethod
    def working_memory(spec: MultiFrequencySelectionSpec) -> tuple[str, str, int] | None:
        """Nothing its spec decides: a selection holds a few numbers per agent."""
        return None

    def subpopulation(self, slot: int) -> int:
        return slot // self.subpopulation_size

    def _ranked(self, scores: np.ndarray, slots: range | list[int]) -> list[int]:
        """``slots`` by fitness, best first; equal fitness: lower slot first."""
        return sorted(slots, key=lambda k: (-scores[k], k))

    def plan(self, fitness: list[float], indices: list[int]) -> list[Placement]:
        """The next generation, slot by slot (see the module docstring). Every agent is
        carried forward unless its sub-population evolves on this selection."""
        scores = np.array(fitness, dtype=float)
        next_index = max(indices) + 1
        plan = [Placement(k, indices[k], unchanged="kept") for k in range(len(scores))]
        size = self.subpopulation_size
        b = self.brackets
        for sub, ratio in enumerate(self.ratios):
            self.counters[sub] += 1
            if self.counters[sub] < ratio:
                continue
            self.counters[sub] = 0
            members = self._ranked(scores, range(sub * size, (sub + 1) * size))
            winners = members[: b.winners]
            kept = b.winners + b.survivors  # the open agents follow the kept ones
            opened = members[kept : kept + b.open_for_migration]
            for loser in members[kept + b.open_for_migration :]:
                parent = winners[int(self.rng.integers(len(winners)))]
                plan[loser] = Placement(parent, next_index)
                next_index += 1
            # Candidates as every agent stood before this selection: a migrant is never
            # an agent that another sub-population's step has just replaced.
            others = [k for k in range(len(scores)) if self.subpopulation(k) != sub]
            candidates = self._ranked(scores, others)
            taken = 0
            for slot in opened:
                if taken == len(candidates):
                    break
                migrant = candidates[taken]
                if scores[slot] >= scores[migrant]:
                    continue
                faster = self.ratios[self.subpopulation(migrant)] < ratio
                plan[slot] = Placement(
                    migrant,
                    next_index,
                    unchanged="migrant",
                    hyperparameters_from=winners[0] if faster else None,
                )
                next_index += 1
                taken += 1
        return plan

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "counters": list(self.counters)}

    def load_state_dict(self, state: dict[str, Any], where: str = "") -> None:
        """Restore the generator and counters :meth:`state_dict` saved (checked first)."""
        checkpoints.require(state, {"rng": dict, "counters": checkpoints.ListOf(int)}, where)
        if len(state["counters"]) != len(self.ratios):
            raise checkpoints.CheckpointError(
                f"{checkpoints.join(where, 'counters')}: {len(state['counters'])} counters "
                f"for {len(self.ratios)} sub-populations"
            )
        self.rng = checkpoints.generator_from_state(state["rng"], checkpoints.join(where, "rng"))
        self.counters = list(state["counters"])
