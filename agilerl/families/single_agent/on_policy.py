"""The on-policy turn (PPO-style agents learning from their own rollouts) and
``train_on_policy``, AgileRL's entry point for it."""

from __future__ import annotations

from typing import Any

import torch
from typing_extensions import Unpack

from agilerl.cohorts.policy import OwnRollouts, PolicyCohort, Rollouts
from agilerl.families.base import Memory
from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.cohort_envs import CohortEnv, CohortEnvs, OwnEnv
from agilerl.families.single_agent.scoring import Scoring
from agilerl.training.cohorting import trains_in_cohorts
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Trained,
    TrainTurn,
    Turns,
    closing,
    evolve,
    reset_seed,
    run_config,
)
from agilerl.training.state import turn_generators
from agilerl.training.tracking import MeanMetrics


def on_policy_turns(
    env: Any,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    env_spec: Any = None,
    scoring: Scoring | None = None,
    *,
    source: PythonEnv | None = None,
    cohorts: bool = True,
) -> Turns:
    """The agents of a turn (a cohort, or an agent alone) collect rollouts of
    ``learn_step`` env steps each (rounded up to whole vector steps) and learn from
    each, until their ``evo_steps`` share is used; then they are evaluated by their
    mean return.

    An agent alone steps the vectorised ``env``. Where :mod:`~agilerl.training.cohorting`
    lets them (``cohorts``; copies of ``env`` made from ``env_spec``, the environment
    section ``env`` was built from, and from ``source``, the environment given in
    Python), agents of one cohort (:mod:`agilerl.cohorts`) step copies of their own
    together. One turn trains either (:func:`on_policy_turn`); agents are evaluated
    where ``scoring`` says (:mod:`.scoring`; default: on ``env``).
    """
    scoring = scoring or Scoring(env)
    cohorting = run_cohorting(cohorts, env_spec, source)  # each agent its own rollouts
    if not trains_in_cohorts(cohorting):
        return Turns(
            on_policy_turn(env, None),
            scoring.evaluation(eval_steps, eval_loop),
            close=scoring.close,
        )
    cohort_envs = CohortEnvs(env_spec, source)
    return Turns(
        on_policy_turn(env, cohort_envs),
        scoring.evaluation(eval_steps, eval_loop, cohort_envs),
        cohorting=cohorting,
        close=closing(cohort_envs.close, scoring.close),
    )


def on_policy_turn(env: Any, cohort_envs: CohortEnvs | None) -> TrainTurn:
    """The on-policy turn of P agents: each steps its own environments, reset with the
    seed of its slot, a rollout of every agent at a time, each learning from its own
    rollout with minibatch orders drawn from its own generator. What differs with P is
    chosen once, at its start; an on-policy turn keeps no journal."""

    def start(
        agents: list[Any], slots: list[int], run: RunState
    ) -> tuple[Rollouts, CohortEnv, list[torch.Generator]]:
        """An agent alone (its history as it always was): the run's ``env``, the agent's
        own collection and view (:class:`~agilerl.cohorts.policy.OwnRollouts`) and torch's
        global generator, which the loop seeds for its turn and its actions draw from
        too. A cohort: its copies (``cohort_envs``), the stacked view
        (:class:`~agilerl.cohorts.policy.PolicyCohort`) and a generator per agent seeded
        as its own turn seeds torch's."""
        if len(agents) == 1:
            return OwnRollouts(agents[0]), OwnEnv(env), [torch.default_generator]
        assert cohort_envs is not None  # cohorts form only where copies can be made
        envs = cohort_envs.take(len(agents))
        return PolicyCohort(agents), envs, turn_generators(run, slots)

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        learner, envs, generators = start(agents, slots, run)
        obs, info = envs.reset_each([reset_seed(run, slot, 0) for slot in slots])
        for agent in agents:
            agent.reset_rollouts()  # episodes in flight belong to the environments just reset
        taken = 0
        completed: list[list[float]] = [[] for _ in agents]
        metrics = [MeanMetrics() for _ in agents]
        while taken < budget:
            obs, info, returns = learner.collect_rollouts(envs, obs, info)
            for p, figures in enumerate(learner.learn(generators)):
                assert figures is not None  # every PPO agent learns from each rollout
                metrics[p].add(figures)
                completed[p].extend(returns[p])
            taken += agents[0].rollout_steps
        learner.write_back()
        for p, agent in enumerate(agents):
            agent.steps += taken
            agent.scores.extend(completed[p])
        return [(taken, completed[p], metrics[p].means()) for p in range(len(agents))]

    return train


def run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of a run the trainer sets up (:meth:`~agilerl.families.base.Family.turns`):
    :func:`on_policy_turns` with the run's training section and environment (section and
    Python source); on-policy agents keep their own rollouts, no ``memory``."""
    training = ctx.training
    return on_policy_turns(
        env,
        training.eval_steps,
        training.eval_loop,
        ctx.environment,
        Scoring(env, ctx.environment, ctx.env_source),
        source=ctx.env_source,
        cohorts=training.cohorts,
    )


def train_on_policy(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    *,
    env_spec: Any = None,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population of on-policy agents on a vectorised ``env``
    (:func:`on_policy_turns`), with evolution when ``selection_strategy`` and
    ``mutation`` are given. The other keyword arguments (budget, evaluation, checkpoints,
    resuming) are :class:`~agilerl.training.evolution.LoopArguments`.
    With ``env_spec`` (the :class:`~agilerl.models.env.GymEnvSpec` ``env`` was built
    from), agents that share an architecture and a loop shape train as cohorts
    (``cohorts=False`` in the loop arguments: one at a time), stepping a vector env of
    the same spec per agent.
    Returns ``(population, fitnesses)``.
    """
    turns = on_policy_turns(
        env,
        loop.get("eval_steps"),
        loop.get("eval_loop", 1),
        env_spec,
        Scoring(env, env_spec),
        cohorts=loop.get("cohorts", True),
    )
    return evolve(pop, turns, run_config(algo, env_name, loop))
