"""MADDPG and MATD3 teams as one cohort: every team acts with one forward per agent group,
and learns with one loss and one optimiser step per group and optimiser.

The cohort is the algorithm's own code on a view of its teams, the family's turn's
(:class:`~agilerl.families.multi_agent.loops.TeamTurn`): the stacked view of P teams
(:class:`~agilerl.cohorts.team_views.TeamPopulation`: per group, the actors, critics,
targets and both optimisers of every team), or the view of one team
(:meth:`~agilerl.algorithms.core.population.Population.of`: exactly the team's own
``explore`` and ``learn``). Acting is
:meth:`~agilerl.algorithms.maddpg.MADDPG.act`, learning
:meth:`~agilerl.algorithms.maddpg.MADDPG.update`. What stays each team's own: its
losses (masked means over its own active rows), learning rates, ``gamma``, ``tau``,
``batch_size`` (a larger one pads the others' blocks, which no loss reads),
``policy_freq`` (a team whose actor update is not due is masked out of the actor steps
and the target update), its exploration noise and MATD3's target smoothing noise (drawn
by the team for its own rows from its own generator). Categorical actions are sampled
(and relaxed for the actor update) from torch's global generator, which the generation
loop seeds per cohort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.core.population import Population
from agilerl.cohorts.team_views import TeamPopulation


class TeamActorCriticCohort:
    """MADDPG or MATD3 teams (same architecture) as one; see the module docstring.
    ``view``: the turn's view of ``agents`` (:class:`~agilerl.families.multi_agent.loops.
    TeamTurn`'s; None: their stacked view, as a cohort learner is made of its agents)."""

    def __init__(self, agents: Sequence[Any], view: Population[Any] | None = None) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.view = TeamPopulation(self.agents) if view is None else view

    def explore(self, obs: Any, infos: Any = None) -> dict[str, np.ndarray]:
        """Every team's exploring actions for the cohort's observations (team ``p``'s
        rows the ``p``-th block of every agent's): the algorithm's ``act`` on the view."""
        return self.template.act(self.view, obs, infos)

    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        """One learning call of the teams where ``mask`` holds, each on its block of
        ``batch``: the algorithm's ``update`` on the view."""
        return self.template.update(self.view, batch, np.asarray(mask, dtype=bool), generators)

    def write_back(self) -> None:
        """Every team's weights, target weights and optimiser states back into it."""
        self.view.write_back()
