"""``finetune_llm``: one training loop for the LLM family (GRPO, DPO, SFT), with evolution.

A *step* is one batch of the environment's training split (of a multi-turn environment:
one batch of episodes). Each generation every agent
takes ``evo_steps`` steps on the same batches (the environment's position is put back
before each agent, so the agents compete on equal data), is evaluated on the test split
(``agent.test``: GRPO's mean reward, DPO's preference accuracy, SFT's score) and, with
HPO, tournament selection and mutation make the next generation. The generation loop
itself is :func:`~agilerl.training.evolution.evolve`: the progress bar, the
per-generation table, run checkpoints and resuming are the RL ones. How an agent takes
one step depends only on the environment's type (:data:`STEPS`).

The schemas name three training functions (``finetune_llm_reasoning``,
``finetune_llm_preference``, ``finetune_llm_sft``), and the sampling algorithms'
``get_training_fn(multiturn=True)`` a fourth, ``finetune_llm_multiturn``; each is this
loop on its environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from agilerl.distributed.group import current_group
from agilerl.families.base import Memory
from agilerl.families.context import RunContext
from agilerl.llm.batches import Experience
from agilerl.llm.data_parallel import DataParallel
from agilerl.llm.rewards import RewardError
from agilerl.training.callbacks import Callback
from agilerl.training.errors import TrainerError
from agilerl.training.evolution import RunConfig, RunState, Turns, each_alone, evolve, one_by_one
from agilerl.training.run_checkpoint import RunCheckpointer, checkpointer_for
from agilerl.training.tracking import MeanMetrics

#: One training step: (agent, env) -> (the agent's learn metrics, the step's training
#: score or None). GRPO samples completions of a prompt batch, has them scored and learns
#: from the rewards (its score: their mean); DPO and SFT learn from a batch as it comes.
Step = Callable[[Any, Any], tuple[dict[str, float], float | None]]


def reasoning_step(agent: Any, env: Any) -> tuple[dict[str, float], float | None]:
    prompts = env.next_batch()
    completions = agent.get_action(prompts, training=True)
    rewards = env.rewards(prompts, completions)
    metrics = dict(agent.learn(Experience(completions, rewards)))
    # Data-parallel: the score of the global batch (this rank scored its share).
    return metrics, float(DataParallel.current().gather(rewards.float()).mean())


def multiturn_step(agent: Any, env: Any) -> tuple[dict[str, float], float | None]:
    # A batch of episodes played in lock-step (agilerl.families.llm.multiturn).
    experience = env.rollout(agent)
    metrics = dict(agent.learn(experience))
    return metrics, float(DataParallel.current().gather(experience.rewards.float()).mean())


def batch_step(agent: Any, env: Any) -> tuple[dict[str, float], float | None]:
    return dict(agent.learn(env.next_batch())), None


#: Environment type (``env_type`` of the environment spec) -> how an agent takes a step.
STEPS: dict[str, Step] = {
    "reasoning": reasoning_step,
    "multiturn": multiturn_step,
    "preference": batch_step,
    "sft": batch_step,
}


@dataclass(frozen=True)
class ScoreColumn:
    """How a step's training score shows in the per-generation table."""

    #: Its heading; None: the step scores nothing, so the table has no such column.
    heading: str | None
    #: The learn metric that is the same figure, left out of the table.
    repeats: str | None = None


#: Environment type -> its training score's column. GRPO's score is the mean reward of
#: its completions, which its ``reward`` metric also is (a multi-turn step's: the mean
#: episode return); DPO and SFT batches carry no reward, so they have no training score.
SCORE_COLUMNS: dict[str, ScoreColumn] = {
    "reasoning": ScoreColumn("train reward", repeats="reward"),
    "multiturn": ScoreColumn("train return", repeats="reward"),
    "preference": ScoreColumn(None),
    "sft": ScoreColumn(None),
}


def llm_turns(
    pop: list[Any],
    env: Any,
    *,
    env_type: str,
    max_steps: int = 1000,
    eval_loop: int = 1,
    num_epochs: int | None = None,
    evaluation_interval: int | None = None,
) -> Turns:
    """The turns of a population of LLM agents on ``env`` (see :func:`finetune_llm` for
    the arguments): every agent of a generation steps from the same batches, and is
    tested on the test split where ``evaluation_interval`` says. A reward function that
    fails (training or testing) is a :class:`~agilerl.training.errors.TrainerError`
    naming the file, function and sample."""
    if env_type not in STEPS:
        raise ValueError(f"env_type: {env_type!r} is not one of {sorted(STEPS)}")
    if evaluation_interval is not None and evaluation_interval < 1:
        raise ValueError(f"evaluation_interval: {evaluation_interval} is not a positive int")
    step = STEPS[env_type]
    # Where the generation's batches start: every agent of a generation trains on them.
    start: dict[str, Any] = {}

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        if slot == 0:
            start["env"], start["budget"] = env.state_dict(), budget
        else:
            env.load_state_dict(start["env"])
        metrics = MeanMetrics()
        scores: list[float] = []
        for _ in range(budget):
            learned, score = _rewarded(lambda: step(agent, env))
            metrics.add(learned)
            if score is not None:
                scores.append(score)
        agent.steps += budget
        agent.scores.extend(scores)
        return budget, scores, metrics.means()

    def evaluate_agent(agent: Any, slot: int, run: RunState) -> tuple[float, int]:
        if agent.fitness and not due(run.steps, run.steps + start["budget"]):
            return agent.fitness[-1], 0
        return float(_rewarded(lambda: agent.test(env, loop=eval_loop))), 0

    def due(before: int, after: int) -> bool:
        """Whether a generation from ``before`` to ``after`` steps ends with a test."""
        interval = evaluation_interval or 1
        return after >= max_steps or before // interval < after // interval

    stops = {}
    if num_epochs is not None:
        stops["num_epochs"] = lambda run: env.num_epochs >= num_epochs
    return Turns(
        one_by_one(train_agent),
        each_alone(evaluate_agent),
        stops=stops,
        table_metrics=tuple(
            m for m in type(pop[0]).learn_metrics if m != SCORE_COLUMNS[env_type].repeats
        ),
        score_column=SCORE_COLUMNS[env_type].heading,
    )


T = TypeVar("T")


def _rewarded(call: Callable[[], T]) -> T:
    """``call()``, a reward function's failure in it as the run's one line."""
    try:
        return call()
    except RewardError as err:  # names the file, function and sample
        raise TrainerError(f"environment.reward_fn_name: {err}") from None


def run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of a run the trainer sets up (:meth:`~agilerl.families.base.Family.turns`):
    :func:`llm_turns` on the environment section's type (a multi-turn section, or the
    algorithm's dataset kind) with the run's training section."""
    training = ctx.training
    return llm_turns(
        population,
        env,
        env_type=str(ctx.environment.env_type),
        max_steps=training.max_steps,
        eval_loop=training.eval_loop,
        num_epochs=training.num_epochs,
        evaluation_interval=training.evaluation_interval,
    )


def finetune_llm(
    pop: list[Any],
    env: Any,
    *,
    env_type: str,
    max_steps: int = 1000,
    evo_steps: int = 5,
    eval_loop: int = 1,
    target: float | None = None,
    max_reward: float | None = None,
    num_epochs: int | None = None,
    evaluation_interval: int | None = None,
    selection_strategy: Any = None,
    mutation: Any = None,
    checkpoint_steps: int | None = None,
    checkpoint_path: str | None = None,
    overwrite_checkpoints: bool = False,
    checkpointer: RunCheckpointer | None = None,
    state: RunState | None = None,
    max_wall_seconds: float | None = None,
    verbose: bool = True,
    algo: str | None = None,
    env_name: str | None = None,
    callbacks: Sequence[Callback] = (),
) -> tuple[list[Any], list[float]]:
    """Fine-tune a population of LLM agents on ``env`` (a reasoning, preference or SFT
    environment of :mod:`agilerl.families.llm.environments`); returns ``(population, fitnesses)``.

    ``max_steps``: batches per agent; ``num_epochs``: also stop once the training split
    has been passed over that many times (checked after each generation). ``target``
    (or, when no target is given, ``max_reward``, the best reward a completion can earn)
    stops the run once an agent's test fitness reaches it. ``evaluation_interval``:
    steps between evaluations on the test split (None: every generation). An agent is
    evaluated at the end of a generation that reaches a multiple of it, that is the
    run's last, or when it has no fitness yet; otherwise it keeps its latest fitness,
    which selection then uses (as AgileRL does: testing LLMs costs generation time).
    ``eval_loop``: passes over the test split per evaluation. Checkpoints
    (``checkpointer``, or ``checkpoint_steps`` / ``checkpoint_path``) hold the agents,
    operators, RNG states, progress and the environment's position
    (``env.state_dict()``); ``state`` resumes a run. The turns are :func:`llm_turns`.
    """
    turns = llm_turns(
        pop,
        env,
        env_type=env_type,
        max_steps=max_steps,
        eval_loop=eval_loop,
        num_epochs=num_epochs,
        evaluation_interval=evaluation_interval,
    )
    checkpointer = checkpointer_for(
        checkpointer,
        checkpoint_steps,
        checkpoint_path,
        overwrite_checkpoints,
        f"{algo or type(pop[0]).__name__}-{env_type}",
        selection=selection_strategy,
        mutation=mutation,
        env=env,
    )
    config = RunConfig(
        max_steps=max_steps,
        evo_steps=evo_steps,
        target=target if target is not None else max_reward,
        max_wall_seconds=max_wall_seconds,
        selection=selection_strategy,
        mutation=mutation,
        state=state,
        checkpointer=checkpointer,
        verbose=verbose,
        algo=algo or type(pop[0]).__name__,
        env_name=env_name or type(env).__name__,
        callbacks=tuple(callbacks),
        # Data-parallel: every process holds the whole population and takes its share of
        # every batch (agilerl.llm.data_parallel), so evolution runs alike everywhere.
        group=current_group().replicated(),
    )
    return evolve(pop, turns, config)


def _entry_point(env_type: str) -> Callable[..., tuple[list[Any], list[float]]]:
    def train(env: Any, pop: list[Any], **kwargs: Any) -> tuple[list[Any], list[float]]:
        return finetune_llm(pop, env, env_type=env_type, **kwargs)

    train.__name__ = train.__qualname__ = f"finetune_llm_{env_type}"
    train.__doc__ = (
        f"``finetune_llm`` on a {env_type} environment (``env`` first, as the trainer calls)."
    )
    return train


#: The training functions the schemas name (``x-agilerl-algorithm.training_fn``).
finetune_llm_reasoning = _entry_point("reasoning")
finetune_llm_preference = _entry_point("preference")
finetune_llm_sft = _entry_point("sft")
#: Multi-turn environments (``get_training_fn(multiturn=True)`` of the sampling algorithms):
#: a step is one batch of episodes; the test score the mean return of greedy episodes.
finetune_llm_multiturn = _entry_point("multiturn")

__all__ = [
    "SCORE_COLUMNS",
    "STEPS",
    "finetune_llm",
    "finetune_llm_multiturn",
    "finetune_llm_preference",
    "finetune_llm_reasoning",
    "finetune_llm_sft",
    "llm_turns",
]
