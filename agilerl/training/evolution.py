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

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from agilerl.algorithms.protocols import AgentT, EvolvingAgent
from agilerl.distributed.group import Group, current_group
from agilerl.training.report import Progress, describe_best, generation_summary
from agilerl.training.run_checkpoint import RunCheckpointer, checkpointer_for

#: train_agent(agent, slot, budget, state) -> (env steps taken, completed episode returns,
#: metrics): the metrics are the means over the generation of what the agent's ``learn``
#: reported (:class:`~agilerl.training.tracking.MeanMetrics`), plus what the loop adds.
TrainAgent = Callable[
    [EvolvingAgent, int, int, "RunState"], tuple[int, list[float], dict[str, float]]
]

#: evaluate_agent(agent, slot, state) -> (fitness, env steps the evaluation took), or
#: (fitness, steps, figures): evaluation figures recorded beside the agent's metrics
#: (a multi-agent team's fitness per agent group). The fitness is appended to
#: ``agent.fitness``. A family whose fitness is not "episodes in a vector env" (bandit
#: regret, an LLM's reward on a test split, multi-agent summed scores) passes its own;
#: :func:`episode_evaluation` is the single-agent one.
EvaluateAgent = Callable[[EvolvingAgent, int, "RunState"], tuple[Any, ...]]


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
    #: The best agent ever evaluated in the run ("elite"): its fitness, generation and
    #: population index; the agent itself is :attr:`elite`.
    best: dict[str, Any] | None = None
    #: A copy of that agent, taken right after its evaluation, so no later training or
    #: mutation changes it (saved in run checkpoints beside the state, not in it).
    elite: Any = field(default=None, init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self) if f.init}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(**data)

    def consider(self, agent: EvolvingAgent, fitness: float) -> bool:
        """Keep ``agent`` (just evaluated at ``fitness``) as the elite if it beats every
        agent evaluated before; returns whether it did."""
        return self.record_best(fitness, agent.index, lambda: snapshot(agent))

    def record_best(self, fitness: float, index: int, elite: Callable[[], Any]) -> bool:
        """:meth:`consider` for an agent that may live in another process: ``elite()``
        makes the copy to keep (None where this process keeps none)."""
        if self.best is not None and fitness <= self.best["fitness"]:
            return False
        self.best = {"fitness": fitness, "generation": self.generation, "index": index}
        self.elite = elite()
        return True

    @property
    def best_fitness(self) -> float | None:
        return None if self.best is None else self.best["fitness"]


def snapshot(agent: AgentT) -> AgentT:
    """An exact, independent copy of ``agent`` (its :meth:`clone`, which an LLM agent
    makes on the base model it shares). Taking one changes nothing in the run: building
    the copy draws initial weights from torch's global generator, whose state is put
    back (the saved weights replace those draws anyway), and the copy continues the
    agent's own random stream, which is left where it stood."""
    import torch

    stream = copy.deepcopy(agent.rng.bit_generator.state)
    with torch.random.fork_rng(devices=[]):
        twin = agent.clone(index=agent.index)
    agent.rng.bit_generator.state = stream
    twin.rng = np.random.default_rng()
    twin.rng.bit_generator.state = copy.deepcopy(stream)
    return twin


def next_generation(
    population: list[AgentT] | dict[int, AgentT],
    selection: Any,
    mutation: Any,
    group: Group | None = None,
    roster: list[tuple[int, float]] | None = None,
) -> Any:
    """Tournament selection, then mutation (the elite slot, with elitism, unmutated).

    ``population``: every agent (a list), or on a split population this process's agents
    by slot, with ``roster`` the (index, latest fitness) of every slot of the run and
    ``group`` the process group; a clone whose parent lives on another rank is built
    from the state that rank sends. Returns the new generation in the same form."""
    group = group or Group()
    local = dict(enumerate(population)) if isinstance(population, list) else population
    if roster is None:
        roster = [(agent.index, agent.fitness[-1] if agent.fitness else -math.inf)
                  for agent in population]  # fmt: skip
    pop_size = len(roster)
    plan = selection.plan([fit for _, fit in roster], [index for index, _ in roster])
    children: dict[int, AgentT] = {}
    # Every rank walks the same plan in the same order, so each send meets its receive.
    for slot, (parent, index) in enumerate(plan):
        here, there = group.owner(slot, pop_size), group.owner(parent, pop_size)
        if there == group.rank:
            child = local[parent].clone(index=index)
            if here == group.rank:
                children[slot] = child
            else:
                group.send(child.state_dict(), here)
        elif here == group.rank:
            children[slot] = _rebuild(local, group.recv(there))
    mutation.mutation(children, skip_first=selection.elitism)
    return (
        [children[slot] for slot in range(pop_size)] if isinstance(population, list) else children
    )


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


#: Why a run stops, and whether that still holds for a (resumed) run's training spec:
#: a run resumed with a raised budget, or a raised or removed target, goes on.
STOP_REASONS: dict[str, Callable[[RunState, Any], bool]] = {
    "max_steps": lambda state, training: state.steps >= training.max_steps,
    "target_score": lambda state, training: (
        training.target_score is not None
        and state.best is not None
        and state.best_fitness >= training.target_score
    ),
    "max_wall_seconds": lambda state, training: (
        training.max_wall_seconds is not None and state.seconds >= training.max_wall_seconds
    ),
}


def still_finished(state: RunState, training: Any) -> bool:
    """Whether a run that stopped (``state.finished``) stays stopped under ``training``."""
    holds = STOP_REASONS.get(state.finished or "")
    return state.finished is not None and (holds is None or holds(state, training))


def reset_seed(state: RunState, slot: int, purpose: int) -> int:
    """Seed of an environment reset: fixed by the run seed, generation, slot and purpose
    (0 training, 1 evaluation), so a resumed run sees the same episodes."""
    return int(
        np.random.SeedSequence([state.seed, state.generation, slot, purpose]).generate_state(1)[0]
    )


def episode_evaluation(
    env: Any, eval_steps: int | None = None, eval_loop: int = 1
) -> EvaluateAgent:
    """Evaluation by mean episode return on the vectorised ``env`` (``agent.test``),
    with resets seeded from (generation, slot), as the single-agent loops evaluate."""

    def evaluate(agent: Any, slot: int, state: RunState) -> tuple[float, int]:
        fitness = agent.test(
            env, max_steps=eval_steps, loop=eval_loop, seed=reset_seed(state, slot, 1)
        )
        return fitness, agent.eval_steps_taken

    return evaluate


def evolve(
    population: list[AgentT],
    env: Any,
    train_agent: TrainAgent,
    *,
    evaluate_agent: EvaluateAgent | None = None,
    max_steps: int,
    evo_steps: int,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    target: float | None = None,
    selection: Any = None,
    mutation: Any = None,
    state: RunState | None = None,
    memory: Any = None,
    n_step_memory: Any = None,
    checkpoint: int | None = None,
    checkpoint_path: str | None = None,
    overwrite_checkpoints: bool = False,
    checkpointer: RunCheckpointer | None = None,
    max_wall_seconds: float | None = None,
    verbose: bool = True,
    algo: str = "agent",
    env_name: str = "env",
    on_generation: Callable[[RunState], None] | None = None,
    stops: dict[str, Callable[[RunState], bool]] | None = None,
    table_metrics: tuple[str, ...] = (),
    group: Group | None = None,
    sharing: Any = None,
) -> tuple[list[Any], list[float]]:
    """Run generations until ``max_steps`` per agent, ``target`` or ``max_wall_seconds``
    (or a reason of the family's own: ``stops`` maps a reason to whether it holds after
    a generation, e.g. an LLM run's passes over its dataset).

    Each generation trains every agent (``train_agent``), evaluates it
    (``evaluate_agent``; default :func:`episode_evaluation` on ``env`` with
    ``eval_steps`` / ``eval_loop``), keeps the best ever evaluated, then selects and
    mutates. The loop knows nothing of a family beyond :class:`EvolvingAgent`.

    Checkpoints: ``checkpointer``, or one built from ``checkpoint`` (steps between
    checkpoints) / ``checkpoint_path`` (see :func:`checkpointer_for`); ``memory`` is
    the replay buffer they save (``n_step_memory`` the n-step one beside it). ``state``
    resumes a run. ``table_metrics``: learn metrics the per-generation table shows per
    agent (an LLM run's loss and KL).

    ``group``: the processes the population is split over (default: the run's,
    :func:`~agilerl.distributed.group.current_group`; one process unless launched on
    several); ``population`` is then every agent of the run, of which this process
    trains its :meth:`~agilerl.distributed.group.Group.slots`. ``sharing``: the
    off-policy families' :class:`~agilerl.training.sharing.ExperienceSharing`, told
    where each turn begins and ends, and merged once per generation.

    Returns ``(population, fitnesses)``: the last evaluated population (the final
    generation is not selected or mutated again, so every returned agent carries the
    fitness it was evaluated with), every agent of it on every process, and each agent's
    latest fitness.
    """
    group = group or current_group()
    checkpointer = checkpointer_for(
        checkpointer,
        checkpoint,
        checkpoint_path,
        overwrite_checkpoints,
        f"{algo}-{env_name}",
        memory=memory,
        n_step_memory=n_step_memory,
        selection=selection,
        mutation=mutation,
    )
    state = state or RunState()
    evaluate_agent = evaluate_agent or episode_evaluation(env, eval_steps, eval_loop)
    evolving = selection is not None and mutation is not None
    pop_size = len(population)
    local = {slot: population[slot] for slot in group.slots(pop_size)}
    ranks = group.world_size if group.shards else 1  # processes training different agents
    verbose = verbose and group.is_main
    progress = Progress(
        max_steps * pop_size,
        min(state.steps, max_steps) * pop_size,
        verbose,
        f"{algo} on {env_name}",
    )
    started = time.perf_counter() - state.seconds
    if evolving and state.generation == 0:
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
            for slot, agent in local.items():
                record = _turn(agent, slot, budget, state, train_agent, evaluate_agent, sharing)
                records[slot] = record
                gen_env_steps += record["env_steps"]
                gen_best = max(gen_best, record["fitness"])
                progress.update(
                    min(record.pop("_taken"), budget) * ranks,  # the other ranks' alike
                    gen_env_steps * ranks / max(time.perf_counter() - gen_start, 1e-9),
                    gen_best if state.best is None else max(gen_best, state.best_fitness),
                    state.generation,
                )
            # Times every rank agrees on (each measures its own clock): the slowest rank's.
            now = time.perf_counter()
            elapsed, seconds = group.slowest(now - gen_start, now - started)
            # What every rank needs of the others: the records and the experience.
            journals = sharing.take() if sharing is not None else {}
            parts = group.all_gather((records, journals))
            records = _by_slot(part[0] for part in parts)
            ordered = [records[slot] for slot in range(pop_size)]
            if sharing is not None:
                sharing.merge(_by_slot(part[1] for part in parts))
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
                del r["_trained"]
            record = {
                "generation": state.generation,
                "steps": state.steps,
                "env_steps": state.env_steps,
                "seconds": elapsed,
                "env_steps_per_s": gen_env_steps / max(elapsed, 1e-9),
                "agents": ordered,
            }
            state.history.append(record)
            progress.write(generation_summary(record, max_steps, state.best, table_metrics))
            if target is not None and state.best_fitness >= target:
                state.finished = "target_score"
            elif state.steps >= max_steps:
                state.finished = "max_steps"
            elif max_wall_seconds is not None and seconds >= max_wall_seconds:
                state.finished = "max_wall_seconds"
            else:
                held = (reason for reason, holds in (stops or {}).items() if holds(state))
                state.finished = next(held, None)
            state.generation += 1
            if state.finished is None and evolving:
                local = next_generation(local, selection, mutation, group, roster)
            state.seconds = seconds
            if checkpointer is not None and (state.finished or checkpointer.due(state)):
                whole = _gather_to_main(local, pop_size, group)
                if whole is not None:
                    checkpointer.write(whole, state)
            if on_generation is not None and group.is_main:
                on_generation(state)
    finally:
        progress.close(done=state.finished == "max_steps")
    if state.finished and verbose:
        progress.write(_closing_line(state))
    population = _gather_everywhere(local, pop_size, group)
    return population, [agent.fitness[-1] for agent in population]


def _turn(
    agent: Any,
    slot: int,
    budget: int,
    state: RunState,
    train_agent: TrainAgent,
    evaluate_agent: EvaluateAgent,
    sharing: Any,
) -> dict[str, Any]:
    """One agent's turn of a generation: train, evaluate; its record in the history."""
    import torch

    started = time.perf_counter()
    # The turn's own random stream: what it draws from torch's global generator (batch
    # indices, sampled actions) cannot depend on the turns before it in this process.
    torch.manual_seed(reset_seed(state, slot, 2))
    if sharing is not None:
        sharing.begin_turn(slot)
    taken, scores, metrics = train_agent(agent, slot, budget, state)
    if sharing is not None:
        sharing.end_turn(slot)
    fitness, eval_taken, *figures = evaluate_agent(agent, slot, state)
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
    }


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
