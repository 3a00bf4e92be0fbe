"""Where a run's agents are evaluated. A spec may shape what the learner sees (an Atari
block's ``episodic_life`` ends its episodes at each lost life, ``clip_reward`` clips its
rewards); fitness is then measured on the game as a player scores it, whole games of
the game's own rewards, in environments of their own
(:func:`~agilerl.families.single_agent.atari.scoring_spec`), as Stable-Baselines3's
Monitor and the published Atari tables score. Elsewhere agents are evaluated on the
training environments themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.atari import scoring_spec
from agilerl.families.single_agent.cohort_envs import CohortEnvs, lockstep_evaluation
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.training.evolution import EvaluateAgent, episode_evaluation


class Scoring:
    """The environments agents are evaluated on: ``env`` (the training vector env, or one
    of the scoring spec with as many copies) for one agent at a time, and a cohort's
    (:meth:`cohorts`). What it builds it closes (:meth:`close`); it makes its copies from
    ``source``, the environment given in Python, where there is one."""

    def __init__(self, env: Any, env_spec: Any = None, source: PythonEnv | None = None) -> None:
        spec = None if env_spec is None else scoring_spec(env_spec)
        #: The scoring spec where it is not the training one (its environments are built here).
        self.spec: Any = None
        self.source = source
        self.env = env
        if spec is not None and spec is not env_spec:
            self.env = make_vector_env(spec, env.num_envs, source)
            self.spec = spec
        self._cohorts: CohortEnvs | None = None

    def evaluation(self, eval_steps: int | None, eval_loop: int) -> EvaluateAgent:
        """One agent evaluated by its mean episode return on :attr:`env`."""
        return episode_evaluation(self.env, eval_steps, eval_loop)

    def cohort_evaluation(
        self, training: CohortEnvs, eval_steps: int | None, eval_loop: int
    ) -> Callable[..., Any]:
        """A cohort's agents evaluated together: on the cohort's own training envs, or on
        envs of the scoring spec, one per agent."""
        self._cohorts = training if self.spec is None else CohortEnvs(self.spec, self.source)
        return lockstep_evaluation(self._cohorts, eval_steps, eval_loop)

    def close(self) -> None:
        """Close the environments built here (the training ones are the loop's)."""
        if self.spec is None:
            return
        self.env.close()
        if self._cohorts is not None:
            self._cohorts.close()
