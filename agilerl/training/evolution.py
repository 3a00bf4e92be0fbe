"""The generation loop shared by the on- and off-policy training functions.

A generation: every agent trains for ``evo_steps`` environment steps (its share of the
``max_steps`` budget), is evaluated, then (with HPO) tournament selection and mutation
make the next generation. Checkpoints are taken at generation boundaries only, so a
checkpoint always holds whole generations; with the run's seed every environment reset
is seeded from (generation, slot), which makes a resumed run continue exactly where the
interrupted one stood.

``max_steps`` is per agent, as in AgileRL: a population of 4 with ``max_steps`` 100k
trains 400k environment steps (plus evaluation steps).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from agilerl.training.report import Progress, generation_summary
from agilerl.training.run_checkpoint import RunCheckpointer, checkpointer_for

#: train_agent(agent, slot, budget, state) -> (env steps taken, completed episode returns)
TrainAgent = Callable[[Any, int, int, "RunState"], tuple[int, list[float]]]


@dataclass
class RunState:
    """Progress of a run, saved in its checkpoints."""

    seed: int = 0
    generation: int = 0
    steps: int = 0  # training env steps per agent so far (the max_steps budget)
    env_steps: int = 0  # every env step taken: all agents, training and evaluation
    seconds: float = 0.0  # wall time spent in generations (resumed runs add up)
    history: list[dict[str, Any]] = field(default_factory=list)
    finished: str | None = None  # why the run stopped: "max_steps", "target_score", ...

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(**data)

    @property
    def best(self) -> float | None:
        if not self.history:
            return None
        return max(a["fitness"] for r in self.history for a in r["agents"])


def reset_seed(state: RunState, slot: int, purpose: int) -> int:
    """Seed of an environment reset: fixed by the run seed, generation, slot and purpose
    (0 training, 1 evaluation), so a resumed run sees the same episodes."""
    return int(
        np.random.SeedSequence([state.seed, state.generation, slot, purpose]).generate_state(1)[0]
    )


def evolve(
    population: list[Any],
    env: Any,
    train_agent: TrainAgent,
    *,
    max_steps: int,
    evo_steps: int,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    target: float | None = None,
    selection: Any = None,
    mutation: Any = None,
    state: RunState | None = None,
    memory: Any = None,
    checkpoint: int | None = None,
    checkpoint_path: str | None = None,
    overwrite_checkpoints: bool = False,
    checkpointer: RunCheckpointer | None = None,
    max_wall_seconds: float | None = None,
    verbose: bool = True,
    algo: str = "agent",
    env_name: str = "env",
    on_generation: Callable[[RunState], None] | None = None,
) -> tuple[list[Any], list[float]]:
    """Run generations until ``max_steps`` per agent, ``target`` or ``max_wall_seconds``.

    Checkpoints: ``checkpointer``, or one built from ``checkpoint`` (steps between
    checkpoints) / ``checkpoint_path`` (see :func:`checkpointer_for`); ``memory`` is
    the replay buffer they save. ``state`` resumes a run.

    Returns ``(population, fitnesses)``: the last evaluated population (the final
    generation is not selected or mutated again, so every returned agent carries the
    fitness it was evaluated with) and each agent's latest fitness.
    """
    checkpointer = checkpointer_for(
        checkpointer,
        checkpoint,
        checkpoint_path,
        overwrite_checkpoints,
        f"{algo}-{env_name}",
        memory=memory,
        selection=selection,
        mutation=mutation,
    )
    state = state or RunState()
    evolving = selection is not None and mutation is not None
    pop_size = len(population)
    progress = Progress(
        max_steps * pop_size,
        min(state.steps, max_steps) * pop_size,
        verbose,
        f"{algo} on {env_name}",
    )
    started = time.perf_counter() - state.seconds
    try:
        while state.finished is None:
            budget = min(evo_steps, max_steps - state.steps)
            if budget <= 0:
                state.finished = "max_steps"
                break
            gen_start = time.perf_counter()
            gen_env_steps = 0
            records = []
            trained = 0
            for slot, agent in enumerate(population):
                taken, scores = train_agent(agent, slot, budget, state)
                fitness = agent.test(
                    env, max_steps=eval_steps, loop=eval_loop, seed=reset_seed(state, slot, 1)
                )
                gen_env_steps += taken + agent.eval_steps_taken
                trained = max(trained, taken)
                hyper = agent.hyperparameters()
                records.append(
                    {
                        "index": agent.index,
                        "fitness": fitness,
                        "train_score": float(np.mean(scores)) if scores else None,
                        "mutation": agent.mut,
                        "mutable": {n: hyper[n] for n in sorted(agent.hp_config)},
                        "hyperparameters": hyper,
                    }
                )
                progress.update(
                    taken,
                    gen_env_steps / max(time.perf_counter() - gen_start, 1e-9),
                    state.best if state.best is not None else fitness,
                    state.generation,
                )
            elapsed = time.perf_counter() - gen_start
            state.steps += trained
            state.env_steps += gen_env_steps
            record = {
                "generation": state.generation,
                "steps": state.steps,
                "env_steps": state.env_steps,
                "seconds": elapsed,
                "env_steps_per_s": gen_env_steps / max(elapsed, 1e-9),
                "agents": records,
            }
            state.history.append(record)
            progress.write(generation_summary(record, max_steps))
            best = max(r["fitness"] for r in records)
            if target is not None and best >= target:
                state.finished = "target_score"
            elif state.steps >= max_steps:
                state.finished = "max_steps"
            elif max_wall_seconds is not None and time.perf_counter() - started >= max_wall_seconds:
                state.finished = "max_wall_seconds"
            state.generation += 1
            if state.finished is None and evolving:
                population = selection.select(population)[1]
                mutation.mutation(population, skip_first=selection.elitism)
            state.seconds = time.perf_counter() - started
            if checkpointer is not None and (state.finished or checkpointer.due(state)):
                checkpointer.write(population, state)
            if on_generation is not None:
                on_generation(state)
    finally:
        progress.close()
    if state.finished and verbose:
        progress.write(_closing_line(state))
    return population, [agent.fitness[-1] for agent in population]


def _closing_line(state: RunState) -> str:
    rate = state.env_steps / max(state.seconds, 1e-9)
    reason = {
        "max_steps": "step budget used",
        "target_score": "target score reached",
        "max_wall_seconds": "wall-clock limit reached",
    }.get(state.finished or "", state.finished)
    return (
        f"finished ({reason}) after {state.generation} generation"
        f"{'s' if state.generation != 1 else ''}: best fitness "
        f"{state.best:.1f}, {state.env_steps:,} env steps in {state.seconds:.1f} s "
        f"({rate:,.0f} env steps/s)"
    )


def vector_steps(budget: int, num_envs: int) -> int:
    """Vector steps covering ``budget`` env steps (the last one may overshoot)."""
    return max(1, math.ceil(budget / num_envs))
