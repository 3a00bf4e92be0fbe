"""The state of a run: what a run checkpoint saves and a resumed run continues from.

:class:`RunState` is read and written by the generation loop
(:mod:`agilerl.training.evolution`) and by run checkpoints
(:mod:`agilerl.training.run_checkpoint`); it lives apart from both so that neither
imports the other for it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from agilerl.algorithms.core.protocols import AgentT, EvolvingAgent


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
    #: The kinds of warning the run has given (each is given once a run; not saved).
    warned: set[type[Warning]] = field(default_factory=set, init=False, repr=False, compare=False)

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
    # a callback's stop was that run's decision: a resumed run goes on
    "callback": lambda state, training: False,
}


def still_finished(state: RunState, training: Any) -> bool:
    """Whether a run that stopped (``state.finished``) stays stopped under ``training``."""
    holds = STOP_REASONS.get(state.finished or "")
    return state.finished is not None and (holds is None or holds(state, training))


def turn_generators(state: RunState, slots: Sequence[int]) -> list[Any]:
    """One torch generator per agent of a cohort turn, seeded as that agent's own turn
    seeds torch's global one (purpose 2): what an agent draws does not depend on its
    cohort."""
    import torch  # the run state itself holds no tensors

    return [torch.Generator().manual_seed(reset_seed(state, slot, 2)) for slot in slots]


def reset_seed(state: RunState, slot: int, purpose: int) -> int:
    """Seed of an environment reset: fixed by the run seed, generation, slot and purpose
    (0 training, 1 evaluation), so a resumed run sees the same episodes."""
    return int(
        np.random.SeedSequence([state.seed, state.generation, slot, purpose]).generate_state(1)[0]
    )
