"""``train_offline``: agents learning from a fixed dataset, evaluated in an environment,
with evolution (CQN)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agilerl.training.evolution import RunState, evolve
from agilerl.training.replay import Replay
from agilerl.training.run_checkpoint import RunCheckpointer
from agilerl.training.tracking import MeanMetrics


def train_offline(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: Any,
    *,
    dataset: Any = None,
    max_steps: int = 1_000_000,
    evo_steps: int = 10_000,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    target: float | None = None,
    selection_strategy: Any = None,
    mutation: Any = None,
    checkpoint: int | None = None,
    checkpoint_path: str | None = None,
    overwrite_checkpoints: bool = False,
    checkpointer: RunCheckpointer | None = None,
    state: RunState | None = None,
    max_wall_seconds: float | None = None,
    verbose: bool = True,
    on_generation: Callable[[RunState], None] | None = None,
) -> tuple[list[Any], list[float]]:
    """Train a population on the transitions in ``memory`` and evolve it.

    ``memory`` is a replay buffer holding the dataset; an empty one is filled once from
    ``dataset`` (an :class:`~agilerl.offline.datasets.OfflineDataset`, e.g. from
    :func:`~agilerl.offline.datasets.load_dataset`), and nothing is added to it after.
    A training step is one learning update: in each generation every agent makes
    ``evo_steps`` updates on uniform samples of ``agent.batch_size`` transitions
    (``learn_step`` has no role: no environment is stepped between updates), then is
    evaluated by its mean return over ``eval_loop`` episodes of the vectorised ``env``
    (the environment the dataset came from). Selection, mutation, checkpoints
    (``checkpointer`` or ``checkpoint`` / ``checkpoint_path``), resuming (``state``), the
    progress bar and the per-generation table: see
    :func:`~agilerl.training.evolution.evolve`. Returns ``(population, fitnesses)``.
    """
    if len(memory) == 0:
        if dataset is None:
            raise ValueError("memory is empty and no dataset was given to fill it from")
        dataset.fill(memory)
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

    return evolve(
        pop,
        env,
        train_agent,
        max_steps=max_steps,
        evo_steps=evo_steps,
        eval_steps=eval_steps,
        eval_loop=eval_loop,
        target=target,
        selection=selection_strategy,
        mutation=mutation,
        state=state,
        memory=memory,
        checkpoint=checkpoint,
        checkpoint_path=checkpoint_path,
        overwrite_checkpoints=overwrite_checkpoints,
        checkpointer=checkpointer,
        max_wall_seconds=max_wall_seconds,
        verbose=verbose,
        algo=algo,
        env_name=env_name,
        on_generation=on_generation,
    )
