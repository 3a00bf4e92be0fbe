"""``train_bandits``: a population of neural bandits (NeuralUCB, NeuralTS), with evolution.

Every agent in turn pulls arms of the bandit for its ``evo_steps`` share of the budget
(:meth:`~agilerl.algorithms.neural_bandit.NeuralBandit.explore`), storing each pull (the
pulled arm's context and its reward) in the shared :class:`BanditMemory` and learning
every ``learn_step`` pulls once it holds a batch. The sharing is generation-synchronous
(:mod:`agilerl.training.sharing`): an agent learns from the memory as the generation
found it plus its own pulls; every agent's pulls are added, in slot order, at the
generation's end. The bandit's own terms are reported:

* fitness: the reward rate of ``eval_steps`` greedy pulls (``eval_loop`` rounds), 0 to 1;
* training score: the reward rate of each stretch of ``episode_steps`` pulls;
* per generation (history metrics and the table): ``reward_rate`` of the generation's
  pulls and ``regret``, the cumulative regret of the agent's lineage (the best arm always
  pays 1, so a pull's regret is ``1 - reward``); the agent keeps its regret curve
  (a point every ``episode_steps`` pulls), which :func:`plot_regret` draws.

Generations, selection, mutation, checkpoints and resuming are
:func:`~agilerl.training.evolution.evolve`'s; every reset of the bandit is seeded from
(generation, slot), so a resumed run draws the same rows.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agilerl.atomic import write_bytes
from agilerl.bandits.memory import BanditMemory
from agilerl.training.evolution import RunState, episode_evaluation, evolve, reset_seed
from agilerl.training.run_checkpoint import RunCheckpointer
from agilerl.training.sharing import ExperienceSharing
from agilerl.training.tracking import MeanMetrics

#: Greedy pulls of an evaluation when the run does not say (``training.eval_steps``).
EVAL_STEPS = 500
#: Pulls the shared memory keeps when the run does not say (``replay_buffer.max_size``).
MEMORY_SIZE = 100_000


def train_bandits(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: BanditMemory | None = None,
    *,
    max_steps: int = 20_000,
    episode_steps: int = 500,
    evo_steps: int = 2_500,
    eval_steps: int | None = EVAL_STEPS,
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
    """Train a population of neural bandits on a :class:`~agilerl.bandits.BanditEnv`
    (see the module docstring). ``memory`` defaults to a fresh :class:`BanditMemory` of
    :data:`MEMORY_SIZE` pulls. Returns ``(population, fitnesses)``."""
    memory = memory if memory is not None else BanditMemory(MEMORY_SIZE)
    if episode_steps < 1:
        raise ValueError(f"episode_steps must be at least 1, got {episode_steps}")

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        contexts = env.reset(seed=reset_seed(run, slot, 0))
        metrics = MeanMetrics()
        scores: list[float] = []
        total = stretch = 0.0
        in_stretch = pending = 0
        for _ in range(budget):
            arm = agent.explore(contexts)
            pulled = contexts[arm]
            contexts, reward = env.step(arm)
            memory.add_pull(pulled, reward)
            agent.steps += 1
            agent.regret += 1.0 - reward
            total += reward
            stretch += reward
            in_stretch += 1
            if in_stretch == episode_steps:
                scores.append(stretch / in_stretch)
                agent.regret_curve.append([float(agent.steps), agent.regret])
                stretch, in_stretch = 0.0, 0
            pending += 1
            if len(memory) >= agent.batch_size:
                while pending >= agent.learn_step:
                    metrics.add(agent.learn(memory.sample(agent.batch_size)))
                    pending -= agent.learn_step
            else:
                pending = 0  # no learning backlog builds up before the memory holds a batch
        if in_stretch:  # the generation's last, shorter stretch
            scores.append(stretch / in_stretch)
            agent.regret_curve.append([float(agent.steps), agent.regret])
        agent.scores.extend(scores)
        figures = {"reward_rate": total / budget, "regret": agent.regret}
        return budget, scores, {**metrics.means(), **figures}

    return evolve(
        pop,
        env,
        train_agent,
        evaluate_agent=episode_evaluation(env, eval_steps or EVAL_STEPS, eval_loop),
        max_steps=max_steps,
        evo_steps=evo_steps,
        target=target,
        selection=selection_strategy,
        mutation=mutation,
        state=state,
        memory=memory,
        sharing=ExperienceSharing(memory),
        checkpoint=checkpoint,
        checkpoint_path=checkpoint_path,
        overwrite_checkpoints=overwrite_checkpoints,
        checkpointer=checkpointer,
        max_wall_seconds=max_wall_seconds,
        verbose=verbose,
        algo=algo,
        env_name=env_name,
        on_generation=on_generation,
        table_metrics=("reward_rate", "regret"),
    )


def plot_regret(agent: Any, path: str | Path) -> Path:
    """PNG of ``agent``'s cumulative regret against its pulls (its lineage's curve),
    beside the linear regret of pulling at random for reference, written atomically."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    # Every curve starts at no pulls, no regret.
    steps = [0.0, *(point[0] for point in agent.regret_curve)]
    regret = [0.0, *(point[1] for point in agent.regret_curve)]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    if agent.regret_curve:
        ax.plot(steps, regret, color="tab:blue", label=f"{agent.name} (agent {agent.index})")
        arms = agent.action_space.n
        random = [s * (1 - 1 / arms) for s in steps]
        ax.plot(steps, random, color="gray", linestyle="--", label="random arm (expected)")
        ax.legend(loc="best", fontsize="small")
    else:
        ax.text(0.5, 0.5, "no pulls recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("pulls (training steps of the agent's lineage)")
    ax.set_ylabel("cumulative regret")
    ax.set_title("cumulative regret of the best agent")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return write_bytes(path, png.getvalue())
