"""Where a run's agents are evaluated. A spec may shape what the learner sees (an Atari
block's ``episodic_life`` ends its episodes at each lost life, ``clip_reward`` clips its
rewards); fitness is then measured on the game as a player scores it, whole games of
the game's own rewards, in environments of their own
(:func:`~agilerl.families.single_agent.atari.scoring_spec`), as Stable-Baselines3's
Monitor and the published Atari tables score. Elsewhere agents are evaluated on the
training environments themselves. One evaluation serves a turn's P agents
(:meth:`Scoring.evaluation`): an agent alone, a cohort together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.core.rl_algorithm import play_episodes
from agilerl.cohorts.stacking import StackedNetwork
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.atari import scoring_spec
from agilerl.families.single_agent.cohort_envs import CohortEnv, CohortEnvs, OwnEnv
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.training.evaluation_cap import episode_steps, warn_if_cut
from agilerl.training.evolution import EvaluateTurn
from agilerl.training.state import RunState, reset_seed

#: How the agents of an evaluation act: ``act(obs, action_mask)``, for every copy.
Act = Callable[[Any, Any], np.ndarray]


class Scoring:
    """The environments agents are evaluated on: ``env`` (the training vector env, or one
    of the scoring spec with as many copies) for an agent alone, and a cohort's (the
    :class:`CohortEnvs` given to :meth:`evaluation`). What it builds it closes
    (:meth:`close`); it makes its copies from ``source``, the environment given in
    Python, where there is one."""

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

    def evaluation(
        self, eval_steps: int | None, eval_loop: int, training: CohortEnvs | None = None
    ) -> EvaluateTurn:
        """The agents of a turn evaluated together, each as it would be alone
        (:meth:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm.test`): ``eval_loop``
        rounds of one episode per copy of its own environments, reset with the seeds of
        its own evaluation, cut at ``eval_steps`` (or the cap,
        :mod:`~agilerl.training.evaluation_cap`), acting with ``eval_action``. Its fitness
        is the mean return, appended to its ``fitness``; its steps are counted until its
        own episodes end.

        An agent alone plays on :attr:`env` with its own policy. A cohort plays on the
        cohort's copies (``training``, the cohort's training envs, or envs of the scoring
        spec, one per agent) with one forward of its stacked policies (the first agent's
        ``eval_action`` of the stacked actor on every row: greedy, so nothing of it is
        per agent)."""
        if training is not None:
            self._cohorts = training if self.spec is None else CohortEnvs(self.spec, self.source)
        cohorts = self._cohorts

        def start(agents: list[Any]) -> tuple[CohortEnv, Act]:
            """What differs with P, chosen once: an agent alone's own env and policy, a
            cohort's copies and stacked policies (a stacked forward's floats are not an
            agent's own)."""
            if len(agents) == 1:
                return OwnEnv(self.env), agents[0].eval_action
            assert cohorts is not None  # cohorts form only where copies can be made
            template = agents[0]
            policy = StackedNetwork([agent.actor for agent in agents], trainable=False)

            def act(obs: Any, action_mask: Any = None) -> np.ndarray:
                return template.eval_action(obs, action_mask, actor=policy.network)

            return cohorts.take(len(agents)), act

        def evaluate(agents: list[Any], slots: list[int], state: RunState) -> list[tuple[Any, ...]]:
            env, act = start(agents)
            n = env.num_envs // len(agents)
            seeds = [reset_seed(state, slot, 1) for slot in slots]

            def reset(round_: int) -> tuple[Any, dict[str, Any]]:
                return env.reset_each([seed + round_ * n for seed in seeds])

            with torch.no_grad():
                returns, taken, cut = play_episodes(
                    env,
                    reset,
                    act,
                    [agent.episodes_ended for agent in agents],
                    episode_steps(eval_steps),
                    eval_loop,
                )
            results: list[tuple[Any, ...]] = []
            for agent, own, steps_taken, own_cut in zip(agents, returns, taken, cut, strict=True):
                fitness = float(np.mean(own))
                agent.fitness.append(fitness)
                agent.eval_steps_taken, agent.eval_cut = steps_taken, own_cut
                results.append((fitness, steps_taken))
            warn_if_cut(any(cut), eval_steps, state)
            return results

        return evaluate

    def close(self) -> None:
        """Close the environments built here (the training ones are the loop's)."""
        if self.spec is None:
            return
        self.env.close()
        if self._cohorts is not None:
            self._cohorts.close()
