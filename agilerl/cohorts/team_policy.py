"""IPPO teams as one cohort: every team's rollout collected in lockstep with one forward
per agent group and step, and every team's PPO epochs of a group learnt with one loss
and one optimiser step each.

The cohort is IPPO's own code on a view of its teams, the family's turn's
(:class:`~agilerl.families.multi_agent.loops.TeamTurn`): the stacked view of P teams
(:class:`~agilerl.cohorts.team_views.TeamPopulation`), or the view of one team
(:meth:`~agilerl.algorithms.core.population.Population.of`: exactly the team's own
``explore``, ``values`` and ``learn``, its minibatch orders from torch's stream). Acting is
:meth:`~agilerl.algorithms.ippo.IPPO.act`, bootstrapping ``population_values``, learning
:meth:`~agilerl.algorithms.ippo.IPPO.update` (each team's own samples, GAE, minibatch
orders from its own generator, coefficients, clip, ``target_kl`` and ``update_epochs``;
teams whose samples of a group do not line up learn it one after another on their own
networks).

Collection (the family's turn,
:func:`~agilerl.families.multi_agent.loops.multi_agent_on_policy_turns`) runs
:func:`~agilerl.components.on_policy.collect_rollout` with the team's own
:class:`~agilerl.families.multi_agent.buffers.TeamRolloutCollector`, the cohort standing
in for the team (:meth:`TeamPolicyCohort.explore`, ``values``, ``last_step``,
``gamma``), on one vector env of the teams' copies (team ``p``'s the ``p``-th block of
``num_envs``), into one rollout of every copy. Time-limit cuts are bootstrapped with
each row's team's ``gamma``. Actions are sampled from torch's global generator, which the
generation loop seeds per cohort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.core.population import Population
from agilerl.cohorts.team_views import TeamPopulation


class TeamPolicyCohort:
    """IPPO teams (same architecture and loop shape) as one; see the module docstring.
    ``view``: the turn's view of ``agents`` (:class:`~agilerl.families.multi_agent.loops.
    TeamTurn`'s; None: their stacked view, as a cohort learner is made of its agents)."""

    def __init__(self, agents: Sequence[Any], view: Population[Any] | None = None) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.view = TeamPopulation(self.agents) if view is None else view
        #: Every row's team's discount (:meth:`use_copies`): what a rollout collector
        #: bootstraps time-limit cuts with.
        self.gamma: np.ndarray = np.zeros(0, dtype=np.float32)
        #: The step :meth:`explore` acted last, as a team's ``last_step``.
        self.last_step: dict[str, dict[str, Any]] = {"log_prob": {}, "value": {}}

    # -- acting: the team's hooks the collector calls ----------------------------------------
    def explore(self, obs: Any, infos: Any = None) -> dict[str, Any]:
        """Every team's sampled actions (one forward per group); the log-probabilities
        and values in :attr:`last_step`."""
        actions, self.last_step = self.template.act(self.view, obs, infos)
        return actions

    def values(self, obs: Any) -> dict[str, np.ndarray]:
        """``V`` of every team's observations (its own critics), per agent id."""
        return self.template.population_values(self.view, obs)

    def use_copies(self, per_team: int) -> None:
        """Collection on ``per_team`` copies per team (a vector env of every team's
        copies, team ``p``'s the ``p``-th block): each row's time-limit cuts are
        bootstrapped with its team's ``gamma`` (:attr:`gamma`, what a rollout collector
        reads of the team it collects for)."""
        self.gamma = np.repeat(
            np.array([agent.gamma for agent in self.agents], dtype=np.float32), per_team
        )

    # -- learning ----------------------------------------------------------------------------
    def learn(
        self, rollout: Any, last_obs: Any, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float]]:
        """Every team's IPPO update on its block of ``rollout``, bootstrapped from
        ``last_obs``; each team's metrics as its own
        :meth:`~agilerl.algorithms.ippo.IPPO.learn` reports them."""
        return self.template.update(self.view, rollout, last_obs, None, generators)

    def write_back(self) -> None:
        """Every team's weights and optimiser states back into it."""
        self.view.write_back()
