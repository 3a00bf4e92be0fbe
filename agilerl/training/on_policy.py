"""``train_on_policy``: PPO-style agents learning from their own rollouts, with evolution."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agilerl.training.evolution import RunState, evolve, reset_seed
from agilerl.training.run_checkpoint import RunCheckpointer
from agilerl.training.tracking import MeanMetrics


def train_on_policy(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    *,
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
    """Train a population of on-policy agents on a vectorised ``env``.

    Each agent in turn collects rollouts of ``learn_step`` env steps (rounded up to
    whole vector steps) and learns from each, until its ``evo_steps`` share is used.
    Checkpoints and resuming as in :func:`~agilerl.training.train_off_policy`.
    Returns ``(population, fitnesses)``.
    """

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
