"""The generation loop shared by the on- and off-policy training functions.

A generation: every agent trains for ``evo_steps`` environment steps (its share of the
``max_steps`` budget), is evaluated, then (with HPO) tournament selection and mutation
make the next generation. Checkpoints are taken at generation boundaries only, so a
checkpoint always holds whole generations; with the run's seed every environment reset
is seeded from (generation, slot), which makes a resumed run continue exactly where the
interrupted one stood.

``max_steps`` is per agent, as in AgileRL: a population of 4 with ``max_steps`` 100k
trains 400k environment steps (plus evaluation steps).

On several processes (:mod:`agilerl.distributed`) each rank trains and evaluates its own
slots of the population; the generation's records (and, off-policy, the experience the
agents gathered: :class:`~agilerl.training.sharing.ExperienceSharing`) are gathered on
every rank, which then decides selection and mutation alike, from the run's seeded
operators; an agent whose parent lives on another rank receives its state over the
process group. Nothing a turn computes depends on which agents ran before it in the
same process (torch's global generator is seeded per turn from (generation, slot);
mutation draws per slot), so the run's history does not depend on how it was split.
Only rank 0 prints, writes checkpoints and reports.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

import numpy as np

from agilerl.algorithms.core.protocols import AgentT, EvolvingAgent
from agilerl.distributed.group import Group, current_group
from agilerl.hpo.placement import Placement
from agilerl.training.callbacks import Callback, stop_requested
from agilerl.training.cohorting import Cohorting, cohorts
from agilerl.training.errors import DivergedError
from agilerl.training.evaluation_cap import episode_steps, warn_if_cut
from agilerl.training.finite import first_non_finite
from agilerl.training.report import Progress, describe_best, generation_summary
from agilerl.training.run_checkpoint import RunCheckpointer, checkpointer_for
from agilerl.training.state import RunState, reset_seed, snapshot

#: What one agent's turn of training gives back: (env steps taken, returns of the
#: episodes it completed, metrics): the metrics are the means over the generation of what
#: the agent's ``learn`` reported (:class:`~agilerl.training.tracking.MeanMetrics`), plus
#: what the loop adds.
Trained = tuple[int, list[float], dict[str, float]]

#: train(agents, slots, budget, state) -> one :data:`Trained` per agent: the agents of one
#: cohort (:mod:`~agilerl.training.cohorting`; an agent alone is a cohort of one) train
#: together for ``budget`` env steps each. A family that shares experience
#: (``Turns.sharing``) gives it each agent's journal of the turn itself.
TrainTurn = Callable[[list[Any], list[int], int, RunState], list[Trained]]

#: evaluate(agents, slots, state) -> per agent (fitness, env steps the evaluation took), or
#: (fitness, steps, figures): evaluation figures recorded beside the agent's metrics (a
#: multi-agent team's fitness per agent group). Each fitness is appended to
#: ``agent.fitness``. A family whose fitness is not "episodes in a vector env" (bandit
#: regret, an LLM's reward on a test split, multi-agent summed scores) passes its own.
EvaluateTurn = Callable[[list[Any], list[int], RunState], list[tuple[Any, ...]]]

#: One agent's evaluation: evaluate_agent(agent, slot, state) -> as one entry of
#: :data:`EvaluateTurn`'s list (:func:`episode_evaluation`, the single-agent one).
EvaluateAgent = Callable[[EvolvingAgent, int, RunState], tuple[Any, ...]]


@dataclass(frozen=True)
class Turns:
    """What a family gives the generation loop: how the agents of a cohort train for a
    generation and how they are evaluated, plus what the family adds to the loop."""

    train: TrainTurn
    evaluate: EvaluateTurn
    #: The off-policy families' :class:`~agilerl.training.sharing.ExperienceSharing`: the
    #: turns give it their journals; the loop merges them once per generation.
    sharing: Any = None
    #: Reasons of the family's own to stop: reason -> whether it holds after a
    #: generation (an LLM run's passes over its dataset).
    stops: dict[str, Callable[[RunState], bool]] = field(default_factory=dict)
    #: Learn metrics the per-generation table shows per agent (an LLM run's loss, KL).
    table_metrics: tuple[str, ...] = ()
    #: The table's name for the training score, in the family's terms (a bandit's is the
    #: reward rate of its training pulls); None: the family's training plays no
    #: episodes (offline updates), so the table has no such column.
    score_column: str | None = "train score"
    #: What of the run decides whether its agents train as cohorts
    #: (:mod:`~agilerl.training.cohorting`); the default: every agent alone.
    cohorting: Cohorting = field(default_factory=Cohorting)
    #: Called once when the run ends (what the turns built for it, cohort envs).
    close: Callable[[], None] | None = None


def one_by_one(
    train_agent: Callable[[Any, int, int, RunState], Trained], sharing: Any = None
) -> TrainTurn:
    """The turn of a family whose agents always train alone (bandits, LLMs: their
    ``Turns.cohorting`` forms no cohort of more than one) from its one-agent turn: each
    agent trains by itself, its turn of ``sharing`` opened and closed around it."""

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        results = []
        for agent, slot in zip(agents, slots, strict=True):
            if sharing is not None:
                sharing.begin_turn(slot)
            results.append(train_agent(agent, slot, budget, run))
            if sharing is not None:
                sharing.end_turn(slot)
        return results

    return train


def each_alone(evaluate_agent: EvaluateAgent) -> EvaluateTurn:
    """The evaluation of a family whose agents are evaluated one by one."""

    def evaluate(agents: list[Any], slots: list[int], run: RunState) -> list[tuple[Any, ...]]:
        return [evaluate_agent(a, s, run) for a, s in zip(agents, slots, strict=True)]

    return evaluate


class Checkpointer(Protocol):
    """What writes a run's checkpoints at generation boundaries
    (:class:`~agilerl.training.run_checkpoint.RunCheckpointer`, or a wrapper of one)."""

    def due(self, state: RunState) -> bool: ...

    def write(self, population: list[Any], state: RunState) -> Any: ...


def closing(*closers: Callable[[], None]) -> Callable[[], None]:
    """One ``Turns.close`` that calls each of ``closers`` in turn."""

    def close() -> None:
        for close_one in closers:
            close_one()

    return close


@dataclass
class RunConfig:
    """How a run's generations go, whatever the family: the budget and stop rules, the
    HPO operators, checkpoints, reporting and the processes the population is split over.

    ``max_steps`` is per agent, as in AgileRL: a population of 4 with ``max_steps`` 100k
    trains 400k environment steps (plus evaluation steps).
    """

    max_steps: int = 1_000_000
    evo_steps: int = 10_000
    #: Stop once an agent's fitness reaches it.
    target: float | None = None
    max_wall_seconds: float | None = None
    #: Tournament selection and mutation; evolution runs when both are given.
    selection: Any = None
    mutation: Any = None
    #: The state of the run to resume (None: a new run).
    state: RunState | None = None
    checkpointer: Checkpointer | None = None
    verbose: bool = True
    #: What the run is called in its progress bar, table and checkpoint names.
    algo: str = "agent"
    env_name: str = "env"
    #: The user's hooks at evaluation and generation ends (:mod:`agilerl.training.callbacks`;
    #: tracking is one too).
    callbacks: Sequence[Callback] = ()
    #: The processes the population is split over (default: the run's,
    #: :func:`~agilerl.distributed.group.current_group`).
    group: Group | None = None

    @property
    def evolving(self) -> bool:
        return self.selection is not None and self.mutation is not None

    @classmethod
    def of(
        cls,
        ctx: ResolvedRun,
        *,
        env_name: str,
        target: float | None,
        selection: Any = None,
        mutation: Any = None,
        checkpointer: Checkpointer | None = None,
        state: RunState | None = None,
        verbose: bool = True,
        callbacks: Sequence[Callback] = (),
        group: Group | None = None,
    ) -> RunConfig:
        """The generations of the run ``ctx`` resolves (a
        :class:`~agilerl.families.context.RunContext`): its budget, evolution steps
        (``training.evo_steps``, else the algorithm's default) and wall-clock limit, named
        after its algorithm and ``env_name``; stopping at ``target`` (the family's:
        ``training.target_score``, or an LLM dataset's best reward), with the run's
        operators, checkpointer, state, callbacks and process group."""
        training = ctx.training
        return cls(
            max_steps=training.max_steps,
            evo_steps=training.evo_steps or ctx.algorithm.default_evo_steps,
            target=target,
            max_wall_seconds=training.max_wall_seconds,
            selection=selection,
            mutation=mutation,
            state=state,
            checkpointer=checkpointer,
            verbose=verbose,
            algo=ctx.algorithm.name,
            env_name=env_name,
            callbacks=tuple(callbacks),
            group=group,
        )


class ResolvedRun(Protocol):
    """What :meth:`RunConfig.of` reads of a run's
    :class:`~agilerl.families.context.RunContext` (named structurally: the families sit
    above this package)."""

    @property
    def algorithm(self) -> Any: ...

    @property
    def training(self) -> Any: ...


class LoopArguments(TypedDict, total=False):
    """The keyword arguments every AgileRL-named training function takes beside its own
    (``train_off_policy(env, env_name, algo, pop, memory, **loop)``); they become the
    :class:`RunConfig` of :func:`run_config`."""

    max_steps: int
    evo_steps: int
    eval_steps: int | None
    eval_loop: int
    target: float | None
    selection_strategy: Any
    mutation: Any
    checkpoint: int | None
    checkpoint_path: str | None
    overwrite_checkpoints: bool
    checkpointer: RunCheckpointer | None
    state: RunState | None
    max_wall_seconds: float | None
    verbose: bool
    callbacks: Sequence[Callback]
    #: Whether agents that share an architecture train as cohorts (the family's turns
    #: read it: :mod:`~agilerl.training.cohorting`).
    cohorts: bool


def run_config(
    algo: str,
    env_name: str,
    loop: LoopArguments,
    *,
    memory: Any = None,
    n_step_memory: Any = None,
) -> RunConfig:
    """The :class:`RunConfig` of an AgileRL-named training function's arguments: its
    checkpoints come from ``checkpointer`` or from ``checkpoint`` (steps between them) /
    ``checkpoint_path`` (:func:`~agilerl.training.run_checkpoint.checkpointer_for`),
    saving ``memory`` (and ``n_step_memory``) beside the population."""
    known = set(LoopArguments.__annotations__)
    unknown = sorted(set(loop) - known)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(unknown)}")
    defaults = RunConfig()
    selection, mutation = loop.get("selection_strategy"), loop.get("mutation")
    return RunConfig(
        max_steps=loop.get("max_steps", defaults.max_steps),
        evo_steps=loop.get("evo_steps", defaults.evo_steps),
        target=loop.get("target"),
        max_wall_seconds=loop.get("max_wall_seconds"),
        selection=selection,
        mutation=mutation,
        state=loop.get("state"),
        checkpointer=checkpointer_for(
            loop.get("checkpointer"),
            loop.get("checkpoint"),
            loop.get("checkpoint_path"),
            loop.get("overwrite_checkpoints", False),
            f"{algo}-{env_name}",
            memory=memory,
            n_step_memory=n_step_memory,
            selection=selection,
            mutation=mutation,
        ),
        verbose=loop.get("verbose", True),
        algo=algo,
        env_name=env_name,
        callbacks=tuple(loop.get("callbacks", ())),
    )


def next_generation(
    population: list[AgentT] | dict[int, AgentT],
    selection: Any,
    mutation: Any,
    group: Group | None = None,
    roster: list[tuple[int, float]] | None = None,
) -> Any:
    """Selection, then mutation of the agents the selection leaves open to it.

    ``population``: every agent (a list), or on a split population this process's agents
    by slot, with ``roster`` the (index, latest fitness) of every slot of the run and
    ``group`` the process group; a clone whose parent lives on another rank is built
    from the state that rank sends, and a migrant that takes on another agent's
    hyperparameters receives them the same way. Returns the new generation in the same
    form."""
    group = group or Group()
    local = dict(enumerate(population)) if isinstance(population, list) else population
    if roster is None:
        roster = [(agent.index, agent.fitness[-1] if agent.fitness else -math.inf)
                  for agent in local.values()]  # fmt: skip
    pop_size = len(roster)
    plan: list[Placement] = selection.plan(
        [fit for _, fit in roster], [index for index, _ in roster]
    )
    children: dict[int, AgentT] = {}
    # Every rank walks the same plan in the same order, so each send meets its receive.
    for slot, placement in enumerate(plan):
        parent = placement.parent
        here, there = group.owner(slot, pop_size), group.owner(parent, pop_size)
        if there == group.rank:
            child = local[parent].clone(index=placement.index)
            if here == group.rank:
                children[slot] = child
            else:
                group.send(child.state_dict(), here)
        elif here == group.rank:
            children[slot] = _rebuild(local, group.recv(there))
    for slot, placement in enumerate(plan):
        source = placement.hyperparameters_from
        if source is None:
            continue
        here, there = group.owner(slot, pop_size), group.owner(source, pop_size)
        if there == group.rank:
            values = local[source].mutable_hyperparameters()
            if here == group.rank:
                _adopt(children[slot], values)
            else:
                group.send(values, here)
        elif here == group.rank:
            _adopt(children[slot], group.recv(there))
    unchanged = {
        slot: placement.unchanged
        for slot, placement in enumerate(plan)
        if placement.unchanged is not None
    }
    mutation.mutation(children, unchanged=unchanged)
    return (
        [children[slot] for slot in range(pop_size)] if isinstance(population, list) else children
    )


def _adopt(agent: Any, values: dict[str, Any]) -> None:
    """``agent`` takes on hyperparameter ``values`` (another agent's mutable ones)."""
    for name, value in values.items():
        agent.set_hyperparameter(name, value)


def _rebuild(local: dict[int, Any], state: dict[str, Any]) -> Any:
    """An agent of this run from the state another process sent (``state_dict()``)."""
    like = next(iter(local.values()))
    return type(like).from_state_dict(state, device=like.device, **like.runtime_args())


class _Held:
    """An agent another process holds, as the state it sent: what a checkpoint saves."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def state_dict(self) -> dict[str, Any]:
        return self.state


def episode_evaluation(
    env: Any, eval_steps: int | None = None, eval_loop: int = 1
) -> EvaluateAgent:
    """Evaluation by mean episode return on the vectorised ``env`` (``agent.test``),
    with resets seeded from (generation, slot), as the single-agent loops evaluate; an
    episode runs ``eval_steps`` at most, or to the cap where that is unset
    (:mod:`~agilerl.training.evaluation_cap`)."""

    def evaluate(agent: Any, slot: int, state: RunState) -> tuple[float, int]:
        fitness = agent.test(
            env,
            max_steps=episode_steps(eval_steps),
            loop=eval_loop,
            seed=reset_seed(state, slot, 1),
        )
        warn_if_cut(agent.eval_cut, eval_steps, state)
        return fitness, agent.eval_steps_taken

    return evaluate


def evolve(
    population: list[AgentT], turns: Turns, config: RunConfig
) -> tuple[list[Any], list[float]]:
    """Run generations until ``config.max_steps`` per agent, ``config.target`` or
    ``config.max_wall_seconds`` (or a reason of the family's own, ``turns.stops``).

    Each generation trains every agent (``turns.train``, a cohort at a time), evaluates
    it (``turns.evaluate``), keeps the best ever evaluated, then selects and mutates
    (when ``config`` has both operators). The loop knows nothing of a family beyond
    :class:`EvolvingAgent` and the family's :class:`Turns`.

    On several processes (``config.group``) ``population`` is every agent of the run, of
    which this process trains its :meth:`~agilerl.distributed.group.Group.slots`.
    ``config.state`` resumes a run; ``config.checkpointer`` writes run checkpoints at
    generation boundaries.

    Returns ``(population, fitnesses)``: the last evaluated population (the final
    generation is not selected or mutated again, so every returned agent carries the
    fitness it was evaluated with), every agent of it on every process, and each agent's
    latest fitness.
    """
    group = config.group or current_group()
    state = config.state or RunState()
    selection, mutation, checkpointer = config.selection, config.mutation, config.checkpointer
    max_steps, evo_steps, target = config.max_steps, config.evo_steps, config.target
    pop_size = len(population)
    local = {slot: population[slot] for slot in group.slots(pop_size)}
    ranks = group.world_size if group.shards else 1  # processes training different agents
    verbose = config.verbose and group.is_main
    progress = Progress(
        max_steps * pop_size,
        min(state.steps, max_steps) * pop_size,
        verbose,
        f"{config.algo} on {config.env_name}",
    )
    started = time.perf_counter() - state.seconds
    if config.evolving and state.generation == 0:
        # AgileRL's loops mutate the whole population once before training (never "no
        # mutation"), so the first selection already chooses between variants. A resumed
        # run is past it.
        mutation.mutation(local, pretraining=True)
    try:
        while state.finished is None:
            budget = min(evo_steps, max_steps - state.steps)
            if budget <= 0:
                state.finished = "max_steps"
                break
            gen_start = time.perf_counter()
            records: dict[int, dict[str, Any]] = {}
            gen_env_steps = 0
            gen_best = -math.inf
            for slot, record in _generation_turns(local, budget, state, turns):
                records[slot] = record
                gen_env_steps += record["env_steps"]
                gen_best = max(gen_best, record["fitness"])
                best = state.best_fitness
                progress.update(
                    min(record.pop("_taken"), budget) * ranks,  # the other ranks' alike
                    gen_env_steps * ranks / max(time.perf_counter() - gen_start, 1e-9),
                    gen_best if best is None else max(gen_best, best),
                    state.generation,
                )
                shown = {key: value for key, value in record.items() if key[0] != "_"}
                for callback in config.callbacks:
                    callback.on_evaluation(local[slot], shown, state)
            # Times every rank agrees on (each measures its own clock): the slowest rank's.
            now = time.perf_counter()
            elapsed, seconds = group.slowest(now - gen_start, now - started)
            # What every rank needs of the others: the records and the experience.
            journals = turns.sharing.take() if turns.sharing is not None else {}
            parts = group.all_gather((records, journals))
            records = _by_slot(part[0] for part in parts)
            ordered = [records[slot] for slot in range(pop_size)]
            # Every rank holds every record now, so every rank stops here alike.
            _refuse_non_finite(ordered, state.generation)
            if turns.sharing is not None:
                turns.sharing.merge(_by_slot(part[1] for part in parts))
            roster = [(r["index"], r["fitness"]) for r in ordered]
            champion = max(range(pop_size), key=lambda i: roster[i][1])  # first of equals
            state.record_best(
                roster[champion][1],
                roster[champion][0],
                lambda local=local, champion=champion: _elite(local, champion, pop_size, group),
            )
            state.steps += max(r["_trained"] for r in ordered)
            gen_env_steps = sum(r["env_steps"] for r in ordered)
            state.env_steps += gen_env_steps
            for r in ordered:
                del r["_trained"], r["_weights_finite"]
            record = {
                "generation": state.generation,
                "steps": state.steps,
                "env_steps": state.env_steps,
                "seconds": elapsed,
                "env_steps_per_s": gen_env_steps / max(elapsed, 1e-9),
                "agents": ordered,
            }
            state.history.append(record)
            progress.write(
                generation_summary(
                    record, max_steps, state.best, turns.table_metrics, turns.score_column
                )
            )
            best = state.best_fitness
            assert best is not None  # record_best above keeps a best once a generation ran
            # the callbacks run on rank 0; every rank stops where they asked it to
            asked = group.is_main and stop_requested(config.callbacks, state)
            stop = any(group.all_gather(asked))
            if target is not None and best >= target:
                state.finished = "target_score"
            elif state.steps >= max_steps:
                state.finished = "max_steps"
            elif config.max_wall_seconds is not None and seconds >= config.max_wall_seconds:
                state.finished = "max_wall_seconds"
            elif stop:
                state.finished = "callback"
            else:
                held = (reason for reason, holds in turns.stops.items() if holds(state))
                state.finished = next(held, None)
            state.generation += 1
            if state.finished is None and config.evolving:
                local = next_generation(local, selection, mutation, group, roster)
            state.seconds = seconds
            if checkpointer is not None and (state.finished or checkpointer.due(state)):
                whole = _gather_to_main(local, pop_size, group)
                if whole is not None:
                    checkpointer.write(whole, state)
    finally:
        progress.close(done=state.finished == "max_steps")
        if turns.close is not None:
            turns.close()
    if state.finished and verbose:
        progress.write(_closing_line(state))
    population = _gather_everywhere(local, pop_size, group)
    return population, [agent.fitness[-1] for agent in population]


#: The figures of a generation record that training produces (the rest are the loop's own
#: counts and the hyperparameters the run was given).
FIGURES = ("fitness", "train_score", "metrics")


def _refuse_non_finite(records: list[dict[str, Any]], generation: int) -> None:
    """Stop the run at the first agent whose fitness, training score or learn metrics
    (in slot order) is NaN or infinite, or whose weights are not all finite after its
    turn: nothing learned from it means anything, and selecting on it, recording it as
    the best ever or checkpointing it would pass the poison on. Raised before any of
    that, so the run's last checkpoint stays the last good one."""
    for slot, record in enumerate(records):
        found = first_non_finite({name: record[name] for name in FIGURES})
        if found is not None:
            figure, value = found
            figure = figure.removeprefix("metrics.")
            what = f"reported {figure} = {value}"
        elif not record.get("_weights_finite", True):
            figure, what = "weights", "holds non-finite network weights after its turn"
        else:
            continue
        raise DivergedError(
            f"generation {generation}: agent {record['index']} (slot {slot}) {what}: "
            "training diverged, and the run stopped before selecting, recording or "
            "checkpointing this generation",
            generation,
            record["index"],
            figure,
        )


def _generation_turns(
    local: dict[int, Any], budget: int, state: RunState, turns: Turns
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every local agent's turn of the generation, in slot order of the cohorts
    (:func:`~agilerl.training.cohorting.cohorts`, of ``turns.cohorting``; an agent alone
    is a cohort of one): ``(slot, record)``."""
    for slots in cohorts(turns.cohorting, local):
        yield from _turn([local[slot] for slot in slots], slots, budget, state, turns)


def _turn(
    agents: list[Any], slots: list[int], budget: int, state: RunState, turns: Turns
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The turn of a cohort: its agents train together (``turns.train``), then are
    evaluated (``turns.evaluate``). The wall time is shared out evenly for the records'
    rates."""
    import torch

    started = time.perf_counter()
    # The turn's own random stream: what it draws from torch's global generator (batch
    # indices, sampled actions) cannot depend on the turns before it in this process.
    # A cohort's is its first slot's (each agent's own draws come from a generator of
    # its own slot: turn_generators).
    torch.manual_seed(reset_seed(state, slots[0], 2))
    results = turns.train(agents, slots, budget, state)
    evaluations = turns.evaluate(agents, slots, state)
    share = (time.perf_counter() - started) / len(agents)  # each agent's part of the turn
    for agent, slot, result, evaluation in zip(agents, slots, results, evaluations, strict=True):
        yield (
            slot,
            _record(agent, slot, result, time.perf_counter() - share, state, evaluation),
        )


def _record(
    agent: Any,
    slot: int,
    trained: Trained,
    started: float,
    state: RunState,
    evaluation: tuple[Any, ...],
) -> dict[str, Any]:
    """The record of the generation of an agent that has trained (``trained``: steps,
    returns, metrics) and been evaluated (``evaluation``); ``started``: when its part of
    the turn began, for its rate."""
    taken, scores, metrics = trained
    fitness, eval_taken, *figures = evaluation
    for extra in figures:
        metrics = {**metrics, **extra}
    steps = taken + eval_taken
    hyper = agent.hyperparameters()
    return {
        "index": agent.index,
        "fitness": fitness,
        "train_score": float(np.mean(scores)) if scores else None,
        "episodes": len(scores),
        "metrics": metrics,
        "env_steps": steps,  # training and evaluation
        "env_steps_per_s": steps / max(time.perf_counter() - started, 1e-9),
        "mutation": agent.mut,
        "mutable": {n: hyper[n] for n in sorted(agent.hp_config)},
        "hyperparameters": hyper,
        "_taken": taken,  # for the progress bar (removed once shown)
        "_trained": taken,  # for the step budget (removed once counted)
        # for the divergence check (removed after it): the figures are means over the
        # turn, so the last update can leave NaN weights behind finite ones
        "_weights_finite": _weights_finite(agent),
    }


def _weights_finite(agent: Any) -> bool:
    """Whether every weight of the agent's networks is finite (one reduction per
    parameter, once a turn)."""
    import torch

    return all(bool(torch.isfinite(p).all()) for p in agent.network_parameters())


def _elite(local: dict[int, Any], champion: int, pop_size: int, group: Group) -> Any:
    """The copy of the run's new best agent that rank 0 keeps (None elsewhere): taken
    here, or sent by the rank that holds it."""
    if not group.shards:  # every process holds every agent: rank 0 keeps its own copy
        return snapshot(local[champion]) if group.is_main else None
    holder = group.owner(champion, pop_size)
    if holder == group.rank == 0:
        return snapshot(local[champion])
    if holder == group.rank:
        group.send(snapshot(local[champion]).state_dict(), 0)
    elif group.is_main:
        return _rebuild(local, group.recv(holder))
    return None


def _by_slot(parts: Any) -> dict[int, Any]:
    """One mapping slot -> value from every rank's mapping of its own slots."""
    return {slot: value for part in parts for slot, value in part.items()}


def _gather_to_main(local: dict[int, Any], pop_size: int, group: Group) -> list[Any] | None:
    """Every agent, in slot order, on rank 0 (what its checkpoints save; others' agents
    as their states); None on the other ranks."""
    if not group.shards:
        return [local[slot] for slot in range(pop_size)]
    parts = group.gather_to_main({slot: agent.state_dict() for slot, agent in local.items()})
    if parts is None:
        return None
    states = _by_slot(parts)
    return [local[slot] if slot in local else _Held(states[slot]) for slot in range(pop_size)]


def _gather_everywhere(local: dict[int, Any], pop_size: int, group: Group) -> list[Any]:
    """Every agent of the run, in slot order, on every rank (rebuilt from the states the
    other ranks send): the population a run returns."""
    if not group.shards:
        return [local[slot] for slot in range(pop_size)]
    states = _by_slot(group.all_gather({slot: a.state_dict() for slot, a in local.items()}))
    return [
        local[slot] if slot in local else _rebuild(local, states[slot]) for slot in range(pop_size)
    ]


def _closing_line(state: RunState) -> str:
    rate = state.env_steps / max(state.seconds, 1e-9)
    reason = {
        "max_steps": "step budget used",
        "target_score": "target score reached",
        "max_wall_seconds": "wall-clock limit reached",
        "callback": "stopped by a callback",
    }.get(state.finished or "", state.finished)
    return (
        f"finished ({reason}) after {state.generation} generation"
        f"{'s' if state.generation != 1 else ''}: {describe_best(state.best)}, "
        f"{state.env_steps:,} env steps in {state.seconds:.1f} s "
        f"({rate:,.0f} env steps/s)"
    )


def vector_steps(budget: int, num_envs: int) -> int:
    """Vector steps covering ``budget`` env steps (the last one may overshoot)."""
    return max(1, math.ceil(budget / num_envs))
