"""``train_offline``: agents learning from a fixed dataset, evaluated in an environment,
with evolution (CQN)."""

from __future__ import annotations

from typing import Any, cast

import numpy as np
from typing_extensions import Unpack

from agilerl.cohorts.learners import LEARNERS, ReplayLearner
from agilerl.cohorts.replay import draw_padded
from agilerl.components.replay import STORAGES, Replay
from agilerl.families.base import Memory
from agilerl.families.context import RunContext
from agilerl.training.cohorting import Cohorting, trains_in_cohorts
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Turns,
    episode_evaluation,
    evolve,
    run_config,
)
from agilerl.training.paired import paired_evaluation, paired_turn
from agilerl.training.state import turn_generators
from agilerl.training.tracking import MeanMetrics

#: The memories a cohort of offline agents has a view of: the uniform buffers (a cohort
#: draws each agent's uniform sample itself).
UNIFORM_REPLAYS = frozenset(STORAGES.values())


def offline_cohorting(cohorts: bool, memory: type) -> Cohorting:
    """An offline run's :class:`~agilerl.training.cohorting.Cohorting`: ``cohorts``
    (``training.cohorts``) and the class of its dataset's buffer; it steps no environment
    while it trains, so its cohorts copy none."""
    return Cohorting(cohorts, copies=True, memory=memory, views=UNIFORM_REPLAYS)


def offline_turns(
    env: Any,
    memory: Any,
    pop: list[Any],
    eval_steps: int | None = None,
    eval_loop: int = 1,
    cohorts: bool = True,
) -> Turns:
    """A training step is one learning update: in each generation every agent makes
    ``evo_steps`` updates on uniform samples of ``agent.batch_size`` transitions of
    ``memory`` (``learn_step`` has no role: no environment is stepped between updates),
    then is evaluated by its mean return over ``eval_loop`` episodes of the vectorised
    ``env`` (the environment the dataset came from). Where
    :mod:`~agilerl.training.cohorting` lets them (``cohorts``; a ``memory`` of
    :data:`UNIFORM_REPLAYS`: a cohort steps no environment, so it copies none), agents
    of one cohort (:mod:`agilerl.cohorts`) make their updates together: one step per
    update for all, each on its own uniform sample."""
    replay = Replay.of(memory)
    for agent in pop:
        replay.check(agent)

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        metrics = MeanMetrics()
        for _ in range(budget):
            metrics.add(replay.learn(agent))
        agent.steps += budget
        # No episodes are played while learning: training scores come from evaluation.
        return budget, [], metrics.means()

    def train_cohort(
        agents: list[Any], slots: list[int], budget: int, run: RunState
    ) -> tuple[list[tuple[int, list[float], dict[str, float]]], list[Any]]:
        learner = cast(ReplayLearner, LEARNERS[type(agents[0])](agents))  # this turn's kind
        sizes = [agent.batch_size for agent in agents]
        everyone = np.ones(len(agents), dtype=bool)
        # Each agent draws its samples as its own turn would: its own generator, seeded
        # as that turn seeds torch's (what it sees does not depend on its cohort).
        generators = turn_generators(run, slots)
        metrics = [MeanMetrics() for _ in agents]
        for _ in range(budget):
            drawn = draw_padded(len(memory), sizes, generators, everyone)
            batch = memory.sample_from_indices(drawn.reshape(-1))
            for own, figures in zip(
                metrics, learner.learn(batch, everyone, generators), strict=True
            ):
                assert figures is not None  # every agent learns at every update
                own.add(figures)
        learner.write_back()
        for agent in agents:
            agent.steps += budget
        return [(budget, [], own.means()) for own in metrics], []

    cohorting = offline_cohorting(cohorts, type(memory))
    return Turns(
        paired_turn(train_agent, train_cohort if trains_in_cohorts(cohorting) else None),
        paired_evaluation(episode_evaluation(env, eval_steps, eval_loop), None),
        cohorting=cohorting,
        score_column=None,  # updates play no episodes: no training score to show
    )


def run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of a run the trainer sets up (:meth:`~agilerl.families.base.Family.turns`):
    :func:`offline_turns` on the run's dataset (``memory``, filled by the family)."""
    training = ctx.training
    return offline_turns(
        env, memory.replay, population, training.eval_steps, training.eval_loop, training.cohorts
    )


def train_offline(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: Any,
    *,
    dataset: Any = None,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population on the transitions in ``memory`` (:func:`offline_turns`) and
    evolve it.

    ``memory`` is a replay buffer holding the dataset; an empty one is filled once from
    ``dataset`` (an :class:`~agilerl.families.offline.datasets.OfflineDataset`, e.g. from
    :func:`~agilerl.families.offline.datasets.load_dataset`), and nothing is added to it
    after. The other keyword arguments (budget, evaluation, checkpoints, resuming) are
    :class:`~agilerl.training.evolution.LoopArguments`. Returns ``(population, fitnesses)``.
    """
    if len(memory) == 0:
        if dataset is None:
            raise ValueError("memory is empty and no dataset was given to fill it from")
        dataset.fill(memory)
    config = run_config(algo, env_name, loop, memory=memory)
    turns = offline_turns(
        env,
        memory,
        pop,
        loop.get("eval_steps"),
        loop.get("eval_loop", 1),
        loop.get("cohorts", True),
    )
    return evolve(pop, turns, config)
