"""The on-policy turn (PPO-style agents learning from their own rollouts) and
``train_on_policy``, AgileRL's entry point for it."""

from __future__ import annotations

from typing import Any

from typing_extensions import Unpack

from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Turns,
    episode_evaluation,
    evolve,
    reset_seed,
    run_config,
)
from agilerl.training.tracking import MeanMetrics


def on_policy_turns(env: Any, eval_steps: int | None = None, eval_loop: int = 1) -> Turns:
    """Each agent in turn collects rollouts of ``learn_step`` env steps (rounded up to
    whole vector steps) on the vectorised ``env`` and learns from each, until its
    ``evo_steps`` share is used; then it is evaluated by its mean return."""

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

    return Turns(train_agent, episode_evaluation(env, eval_steps, eval_loop))


def train_on_policy(
    env: Any, env_name: str, algo: str, pop: list[Any], **loop: Unpack[LoopArguments]
) -> tuple[list[Any], list[float]]:
    """Train a population of on-policy agents on a vectorised ``env``
    (:func:`on_policy_turns`), with evolution when ``selection_strategy`` and
    ``mutation`` are given. The keyword arguments (budget, evaluation, checkpoints,
    resuming) are :class:`~agilerl.training.evolution.LoopArguments`.
    Returns ``(population, fitnesses)``.
    """
    turns = on_policy_turns(env, loop.get("eval_steps"), loop.get("eval_loop", 1))
    return evolve(pop, turns, run_config(algo, env_name, loop))
