"""What the HPO operators can do with their settings, checked when a run is put together.

The schema bounds each field alone (``mutation_sd >= 0``, ``tournament_size >= 1``); what
makes a value useless depends on how the operators use it, which is said here, beside
them, and checked by :class:`~agilerl.trainer.LocalTrainer` for an evolving run before
anything is built:

* ``mutation.mutation_sd`` scales the noise a parameter mutation adds to a weight ``w``:
  standard deviation ``mutation_sd * |w|``. The operator's own strongest noise (the 5%
  "super mutations") is ``10 * |w|``; beyond that the noise replaces the weight rather
  than perturbing it, and a value such as 1e300 overflows float32, so the mutated agent's
  weights become infinite or NaN.
* ``selection_strategy.tournament_size``: a tournament draws its entrants from the
  population with replacement, so more entrants than agents only makes it likelier that
  every tournament picks the fittest agent (1000 entrants of 2 agents: always), and the
  next generation is clones of one agent. A population of one has nothing to select
  from, so any size is moot there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agilerl.hpo.selections import selection_class

if TYPE_CHECKING:  # types only
    from agilerl.models import MutationSpec

#: The largest ``mutation_sd``: the parameter mutation's own strongest noise, 10 x |w|.
MAX_MUTATION_SD = 10.0


# ``selection`` stays Any: either strategy's spec, handed to its own class's ``problems``
# (a pairing of spec and class the checker cannot follow through the table).
def operator_problems(mutation: MutationSpec, selection: Any, pop_size: int) -> list[str]:
    """One ``field: value: why`` line per setting of ``mutation`` (a MutationSpec) and
    ``selection`` (a selection strategy's spec) that the operators cannot use on a
    population of ``pop_size``."""
    problems = []
    sd = mutation.mutation_sd
    if sd > MAX_MUTATION_SD:
        problems.append(
            f"mutation.mutation_sd: {sd:g} is above {MAX_MUTATION_SD:g}: a parameter "
            "mutation adds noise of standard deviation mutation_sd x |weight|, so this "
            "replaces weights by noise (and overflows float32 into inf and NaN) instead of "
            "perturbing them"
        )
    return problems + selection_class(selection).problems(selection, pop_size)
