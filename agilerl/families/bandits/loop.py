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
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from agilerl.families.bandits.memory import BanditMemory
from agilerl.families.base import Memory
from agilerl.families.context import RunContext
from agilerl.files.atomic import write_bytes
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Turns,
    each_alone,
    episode_evaluation,
    evolve,
    one_by_one,
    reset_seed,
    run_config,
)
from agilerl.training.rounds import LearningRounds
from agilerl.training.sharing import ExperienceSharing
from agilerl.training.tracking import MeanMetrics

#: Greedy pulls of an evaluation when the run does not say (``training.eval_steps``).
EVAL_STEPS = 500
#: Pulls the shared memory keeps when the run does not say (``replay_buffer.max_size``).
MEMORY_SIZE = 100_000


def bandit_turns(
    env: Any,
    memory: BanditMemory,
    *,
    episode_steps: int = 500,
    eval_steps: int | None = EVAL_STEPS,
    eval_loop: int = 1,
) -> Turns:
    """Every agent in turn pulls arms of ``env`` for its budget, storing each pull in the
    shared ``memory`` (see the module docstring); fitness is the reward rate of
    ``eval_steps`` greedy pulls."""
    if episode_steps < 1:
        raise ValueError(f"episode_steps must be at least 1, got {episode_steps}")

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        contexts = env.reset(seed=reset_seed(run, slot, 0))
        metrics = MeanMetrics()
        scores: list[float] = []
        total = stretch = 0.0
        in_stretch = 0
        rounds = LearningRounds([agent], 1, learning_delay=0)  # one pull a step
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
            for _ in rounds.after_step(len(memory)):
                metrics.add(agent.learn(memory.sample(agent.batch_size)))
        if in_stretch:  # the generation's last, shorter stretch
            scores.append(stretch / in_stretch)
            agent.regret_curve.append([float(agent.steps), agent.regret])
        agent.scores.extend(scores)
        figures = {"reward_rate": total / budget, "regret": agent.regret}
        return budget, scores, {**metrics.means(), **figures}

    sharing = ExperienceSharing(memory)
    return Turns(
        one_by_one(train_agent, sharing),
        each_alone(episode_evaluation(env, eval_steps or EVAL_STEPS, eval_loop)),
        sharing=sharing,
        # The training score is the reward rate of the training pulls already (the mean of
        # equal stretches): the table shows it once, under its name.
        table_metrics=("regret",),
        score_column="train reward rate",
    )


def run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of a run the trainer sets up (:meth:`~agilerl.families.base.Family.turns`):
    :func:`bandit_turns` with the run's training section and shared memory of pulls."""
    training = ctx.training
    return bandit_turns(
        env,
        memory.replay,
        episode_steps=training.episode_steps,
        eval_steps=training.eval_steps,
        eval_loop=training.eval_loop,
    )


def train_bandits(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: BanditMemory | None = None,
    *,
    episode_steps: int = 500,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population of neural bandits on a
    :class:`~agilerl.families.bandits.BanditEnv` (:func:`bandit_turns`). ``memory``
    defaults to a fresh :class:`BanditMemory` of :data:`MEMORY_SIZE` pulls. The other
    keyword arguments are :class:`~agilerl.training.evolution.LoopArguments`, with a
    bandit's own defaults: ``max_steps`` 20,000, ``evo_steps`` 2,500, ``eval_steps``
    :data:`EVAL_STEPS`. Returns ``(population, fitnesses)``."""
    memory = memory if memory is not None else BanditMemory(MEMORY_SIZE)
    loop = {"max_steps": 20_000, "evo_steps": 2_500, **loop}
    turns = bandit_turns(
        env,
        memory,
        episode_steps=episode_steps,
        eval_steps=loop.get("eval_steps", EVAL_STEPS),
        eval_loop=loop.get("eval_loop", 1),
    )
    return evolve(pop, turns, run_config(algo, env_name, loop, memory=memory))


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
