"""The on-policy turn (PPO-style agents learning from their own rollouts) and
``train_on_policy``, AgileRL's entry point for it."""

from __future__ import annotations

from typing import Any, cast

from typing_extensions import Unpack

from agilerl.cohorts.learners import LEARNERS
from agilerl.cohorts.policy import PolicyCohort
from agilerl.families.base import Memory
from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.cohort_envs import (
    CohortEnvs,
    start_turn,
)
from agilerl.families.single_agent.scoring import Scoring
from agilerl.training.cohorting import trains_in_cohorts
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Turns,
    closing,
    evolve,
    reset_seed,
    run_config,
)
from agilerl.training.paired import paired_evaluation, paired_turn
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
    """Each agent in turn collects rollouts of ``learn_step`` env steps (rounded up to
    whole vector steps) on the vectorised ``env`` and learns from each, until its
    ``evo_steps`` share is used; then it is evaluated by its mean return.

    Where :mod:`~agilerl.training.cohorting` lets them (``cohorts``; copies of ``env``
    made from ``env_spec``, the environment section ``env`` was built from, and from
    ``source``, the environment given in Python), agents of one cohort
    (:mod:`agilerl.cohorts`) train together (:func:`lockstep_turn`).
    Agents are evaluated where ``scoring`` says (:mod:`.scoring`; default: on ``env``).
    """
    scoring = scoring or Scoring(env)

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        obs, info = env.reset(seed=reset_seed(run, slot, 0))
        agent.reset_rollouts()  # episodes in flight belong to the environment just reset
        taken = 0
        completed: list[float] = []
        metrics = MeanMetrics()
        while taken < budget:
            obs, info, returns = agent.collect_rollouts(env, obs, info)
            metrics.add(agent.learn())
            taken += agent.rollout_steps
            completed.extend(returns)
        agent.steps += taken
        agent.scores.extend(completed)
        return taken, completed, metrics.means()

    evaluation = scoring.evaluation(eval_steps, eval_loop)
    cohorting = run_cohorting(cohorts, env_spec, source)  # each agent its own rollouts
    if not trains_in_cohorts(cohorting):
        return Turns(
            paired_turn(train_agent, None),
            paired_evaluation(evaluation, None),
            close=scoring.close,
        )
    cohort_envs = CohortEnvs(env_spec, source)
    return Turns(
        paired_turn(train_agent, lockstep_turn(cohort_envs)),
        paired_evaluation(
            evaluation, scoring.cohort_evaluation(cohort_envs, eval_steps, eval_loop)
        ),
        cohorting=cohorting,
        close=closing(cohort_envs.close, scoring.close),
    )


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


def lockstep_turn(envs: CohortEnvs) -> Any:
    """The on-policy turn of a cohort (:class:`~agilerl.cohorts.policy.PolicyCohort`): its
    P agents step their own environments together (each reset with the seed its own
    turn would use), a rollout of every agent at a time, each learning from its own
    with minibatch orders drawn from its own generator (seeded as its own turn seeds
    torch's). Returns each agent's (steps, returns, metrics); an on-policy turn keeps no
    journal."""

    def train_cohort(
        agents: list[Any], slots: list[int], budget: int, run: RunState
    ) -> tuple[list[tuple[int, list[float], dict[str, float]]], list[Any]]:
        count = len(agents)
        env, obs, info = start_turn(envs, slots, run)
        generators = turn_generators(run, slots)
        learner = cast(PolicyCohort, LEARNERS[type(agents[0])](agents))  # this turn's kind
        for agent in agents:
            agent.reset_rollouts()
        taken = 0
        completed: list[list[float]] = [[] for _ in agents]
        metrics = [MeanMetrics() for _ in agents]
        while taken < budget:
            obs, info, returns = learner.collect_rollouts(env, obs, info)
            for p, figures in enumerate(learner.learn(generators)):
                assert figures is not None  # every agent of a PPO cohort learns each rollout
                metrics[p].add(figures)
                completed[p].extend(returns[p])
            taken += agents[0].rollout_steps
        learner.write_back()
        results = []
        for p, agent in enumerate(agents):
            agent.steps += taken
            agent.scores.extend(completed[p])
            results.append((taken, completed[p], metrics[p].means()))
        return results, [None] * count

    return train_cohort


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
