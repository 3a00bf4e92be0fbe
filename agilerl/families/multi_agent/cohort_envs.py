"""The environments a cohort of teams steps
(:class:`~agilerl.families.multi_agent.loops.TeamTurn`).

A cohort of P teams steps one :class:`~agilerl.families.multi_agent.vector.ParallelVecEnv`
of ``P x num_envs`` copies in this process (team ``p``'s the ``p``-th block; a worker
process per copy would outnumber the cores), each block reset with the seed the team's
own turn resets its environment with, so every team plays the episodes it would play
alone. Evaluation is each team's own (``agent.test``), as without cohorts.
"""

from __future__ import annotations

from typing import Any

from agilerl.families.multi_agent.vector import ParallelVecEnv, make_vector_env
from agilerl.families.python_env import PythonEnv


class TeamCohortEnvs:
    """The environments of a run's team cohorts, of one spec: for a cohort of P teams one
    vector env of ``P x num_envs`` copies, in this process; kept for the run (building
    one costs as much as many steps). ``source``: the factory given in Python the copies
    are made from, where the run's environment was given so."""

    def __init__(self, spec: Any, source: PythonEnv | None = None) -> None:
        self.spec = spec.model_copy(update={"sync": True})
        self.source = source
        self.built: dict[int, ParallelVecEnv] = {}

    def take(self, count: int) -> ParallelVecEnv:
        """The joined environments of a cohort of ``count`` teams."""
        if count not in self.built:
            self.built[count] = make_vector_env(self.spec, count * self.spec.num_envs, self.source)
        return self.built[count]

    def close(self) -> None:
        for env in self.built.values():
            env.close()
        self.built.clear()
