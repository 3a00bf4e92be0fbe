"""``train_offline``: agents learning from a fixed dataset, evaluated in an environment,
with evolution (CQN)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from typing_extensions import Unpack

from agilerl.cohorts.learners import ReplayCohort
from agilerl.cohorts.replay import draw_padded
from agilerl.components.replay import STORAGES, Replay
from agilerl.families.base import Memory
from agilerl.families.context import RunContext
from agilerl.training.cohorting import Cohorting
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Trained,
    Turns,
    each_alone,
    episode_evaluation,
    evolve,
    run_config,
)
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
    update for all, each on its own uniform sample. One turn trains any cohort; an agent
    alone is a cohort of one, and :func:`updates` says what differs with the count.
    ``memory`` must draw uniformly (a prioritised buffer is refused); ``pop`` is not
    read (a uniform memory serves any agent)."""
    if type(Replay.of(memory)) is not Replay:
        raise ValueError(
            f"memory: offline agents learn from uniform samples of their dataset; a "
            f"{type(memory).__name__} draws by priority: pass a ReplayBuffer"
        )

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        learn, generators, write_back = updates(agents, slots, run)
        sizes = [agent.batch_size for agent in agents]
        everyone = np.ones(len(agents), dtype=bool)
        metrics = [MeanMetrics() for _ in agents]
        for _ in range(budget):
            drawn = draw_padded(len(memory), sizes, generators, everyone)
            batch = memory.sample_from_indices(drawn.reshape(-1))
            for own, figures in zip(metrics, learn(batch, everyone, generators), strict=True):
                assert figures is not None  # every agent learns at every update
                own.add(figures)
        write_back()
        for agent in agents:
            agent.steps += budget
        # No episodes are played while learning: training scores come from evaluation.
        return [(budget, [], own.means()) for own in metrics]

    return Turns(
        train,
        each_alone(episode_evaluation(env, eval_steps, eval_loop)),
        cohorting=offline_cohorting(cohorts, type(memory)),
        score_column=None,  # updates play no episodes: no training score to show
    )


#: learn(batch, live, generators) -> each agent's figures: one update of a turn's agents,
#: agent ``p`` on the ``p``-th block of ``batch``.
Learn = Callable[[dict[str, Any], np.ndarray, Sequence[torch.Generator]], list[Any]]


def updates(
    agents: list[Any], slots: list[int], run: RunState
) -> tuple[Learn, list[torch.Generator], Callable[[], None]]:
    """The one place where a turn of P = 1 and one of P > 1 differ: how its agents
    update, what each draws its samples with, and what puts the updates back into them.
    An agent alone learns with its own ``learn`` (the update of its view of one, for the
    algorithms that have one; a user's offline algorithm need only have ``learn``) and
    draws from torch's global generator, which the loop seeded for its turn: exactly the
    samples and updates of ``Replay.learn``. A cohort updates on the stacked view of its agents
    (:class:`~agilerl.cohorts.learners.ReplayCohort`), each drawing with a generator of
    its own slot (:func:`~agilerl.training.state.turn_generators`)."""
    if len(agents) == 1:
        agent = agents[0]
        # The agent learns on its own modules: nothing to write back.
        return (
            lambda batch, live, generators: [agent.learn(batch)],
            [torch.default_generator],
            lambda: None,
        )
    cohort = ReplayCohort(agents)
    return cohort.learn, turn_generators(run, slots), cohort.write_back


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
