"""The replay side of the off-policy loop: where transitions go, where batches come from.

The loop talks to one :class:`Replay`, never to the buffers: it adds every vector step
(:meth:`Replay.add`), asks for a learning step (:meth:`Replay.learn`: a batch is drawn,
the agent learns from it, whatever the draw needs back goes back) and says when an
agent's turn ends (:meth:`Replay.end_turn`, before the environment is reset in
mid-episode). Which replay serves a run follows from its buffers, through
:data:`REPLAYS` (a table keyed by the main buffer's class):

* a :class:`~agilerl.components.replay_buffer.ReplayBuffer`: uniform batches, the
  agent's ``learn(batch)``;
* a :class:`~agilerl.components.prioritized_replay.PrioritizedReplayBuffer`: batches drawn
  by priority with importance-sampling weights at the agent's ``beta`` annealed to 1 over
  the run (:func:`annealed_beta`), the agent's ``learn_prioritized(batch)``, whose
  per-transition losses become the new priorities (plus the agent's ``prior_eps``); the
  ``beta`` it sampled with is reported beside the agent's metrics;
* either, with an :class:`~agilerl.components.n_step_replay.NStepReplayBuffer` beside it
  (``n_step_memory``): every step goes through the n-step buffer first, the main buffer
  receives the 1-step transitions it returns (so slot ``i`` of both holds the same
  (obs, action)), and each batch carries the n-step transitions of its slots under
  ``"n_step"``. Only agents that state ``learns_n_step`` accept that.

:func:`build_replay_buffers` makes the buffers a manifest's ``replay_buffer`` section
describes, refusing combinations the algorithm cannot use, with the key to change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from agilerl.components.frame_replay import FrameReplayBuffer
from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay_buffer import ReplayBuffer

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.models import ReplayBufferSpec
    from agilerl.networks.base import Observation
    from agilerl.networks.distributions import TensorLike


def annealed_beta(beta: float, steps: int, max_steps: int) -> float:
    """The importance-sampling exponent after ``steps`` of a run of ``max_steps`` env
    steps per agent: ``beta`` at the start, rising linearly to 1 at the end. A function
    of the agent's steps, so a resumed or cloned agent continues where it stood."""
    return beta + (1.0 - beta) * min(1.0, steps / max(1, max_steps))


def learns_n_step(agent: Any) -> bool:
    """Whether an agent (or algorithm class) learns from batches with n-step transitions
    (:class:`~agilerl.algorithms.core.exploration.PrioritizedLearning`, or a class that
    states it)."""
    return bool(getattr(agent, "learns_n_step", False))


def learns_from_priorities(agent: Any) -> bool:
    """Whether an agent (or algorithm class) reports per-transition losses as priorities
    (:class:`~agilerl.algorithms.core.exploration.PrioritizedLearning`)."""
    return bool(getattr(agent, "learns_from_priorities", False))


class Replay:
    """Uniform replay from ``memory``, optionally with an n-step buffer beside it."""

    def __init__(
        self, memory: ReplayBuffer, n_step_memory: NStepReplayBuffer | None, max_steps: int
    ) -> None:
        if n_step_memory is not None and n_step_memory.max_size != memory.max_size:
            raise ValueError(
                f"n_step_memory holds {n_step_memory.max_size} transitions, memory "
                f"{memory.max_size}: both are filled in step and read at the same slots, so "
                "they need the same max_size"
            )
        self.memory = memory
        self.n_step_memory = n_step_memory
        self.max_steps = int(max_steps)

    @staticmethod
    def of(memory: object, n_step_memory: object = None, max_steps: int = 1) -> Replay:
        """The replay serving ``memory`` (its class's entry in :data:`REPLAYS`)."""
        if n_step_memory is not None and not isinstance(n_step_memory, NStepReplayBuffer):
            raise TypeError(f"n_step_memory must be an NStepReplayBuffer, got {n_step_memory!r}")
        if not isinstance(memory, ReplayBuffer):
            raise TypeError(f"memory must be a ReplayBuffer, got {memory!r}")
        for klass in type(memory).__mro__:
            if klass in REPLAYS:
                replay = REPLAYS[klass]
                if replay is None:
                    raise TypeError(
                        f"memory: a {klass.__name__} is the n-step buffer beside a replay "
                        "buffer: pass it as n_step_memory"
                    )
                return replay(memory, n_step_memory, max_steps)
        raise TypeError(f"memory must be a ReplayBuffer, got {memory!r}")

    def check(self, agent: Any) -> None:
        """Refuse an agent that cannot learn from what this replay draws."""
        if self.n_step_memory is None:
            return
        if not learns_n_step(agent):
            raise ValueError(
                f"n_step_memory: {agent.name} learns from 1-step transitions; n-step batches "
                "serve agents that learn from them (RainbowDQN)"
            )
        if self.n_step_memory.gamma != agent.gamma:
            raise ValueError(
                f"n_step_memory discounts by gamma {self.n_step_memory.gamma}, the agent by "
                f"{agent.gamma}: build it with the agent's gamma"
            )

    def __len__(self) -> int:
        return len(self.memory)

    def add(
        self,
        obs: Observation,
        action: TensorLike,
        reward: TensorLike,
        next_obs: Observation,
        terminated: TensorLike,
        truncated: TensorLike,
    ) -> None:
        """Store one vector step (``terminated`` is the stored ``done``; ``truncated``
        ends an n-step sum without ending the task)."""
        if self.n_step_memory is None:
            self.memory.add(obs, action, reward, next_obs, terminated)
            return
        rows = self.n_step_memory.add(obs, action, reward, next_obs, terminated, truncated)
        if rows is not None:
            self.memory.store(rows)

    def end_turn(self) -> None:
        """The environment is about to be reset in mid-episode: store what the n-step
        buffer holds back, as if every episode were truncated here."""
        if self.n_step_memory is not None:
            rows = self.n_step_memory.flush()
            if rows is not None:
                self.memory.store(rows)

    def learn(self, agent: Any) -> dict[str, float]:
        """One learning step of ``agent`` on a batch of ``agent.batch_size``; returns what
        it reported."""
        n_step = self.n_step_memory
        batch = self._sample(agent, n_step is not None)
        if n_step is not None:
            batch["n_step"] = n_step.sample_from_indices(batch["indices"])
        return self._learn(agent, batch)

    def _sample(self, agent: Any, indices: bool) -> dict[str, Any]:
        return self.memory.sample(agent.batch_size, return_indices=indices)

    def _learn(self, agent: Any, batch: dict[str, Any]) -> dict[str, float]:
        return agent.learn(batch)


class PrioritizedReplay(Replay):
    """Prioritised replay: batches by priority, new priorities from the agent's losses."""

    memory: PrioritizedReplayBuffer

    def check(self, agent: Any) -> None:
        if not learns_from_priorities(agent):
            raise ValueError(
                f"memory: prioritised replay needs an agent whose losses become priorities "
                f"(RainbowDQN); {agent.name} learns from uniform batches"
            )
        super().check(agent)

    def _beta(self, agent: Any) -> float:
        return annealed_beta(agent.beta, agent.steps, self.max_steps)

    def _sample(self, agent: Any, indices: bool) -> dict[str, Any]:
        return self.memory.sample(agent.batch_size, self._beta(agent))

    def _learn(self, agent: Any, batch: dict[str, Any]) -> dict[str, float]:
        metrics, losses = agent.learn_prioritized(batch)
        self.memory.update_priorities(batch["indices"], losses, prior_eps=agent.prior_eps)
        return {**metrics, "beta": self._beta(agent)}


#: Main buffer class -> the replay that serves it (None: not a main buffer). The most
#: derived class of a buffer found here decides.
REPLAYS: dict[type, type[Replay] | None] = {
    ReplayBuffer: Replay,
    PrioritizedReplayBuffer: PrioritizedReplay,
    NStepReplayBuffer: None,
}

#: ``replay_buffer.storage`` -> the uniform buffer class that stores it.
STORAGES: dict[str, type[ReplayBuffer]] = {
    "transitions": ReplayBuffer,
    "frames": FrameReplayBuffer,
}


def build_replay_buffers(
    spec: ReplayBufferSpec, algorithm: Any, device: str | torch.device = "cpu"
) -> tuple[ReplayBuffer, NStepReplayBuffer | None]:
    """The main buffer and the n-step buffer (or None) a ``replay_buffer`` section
    (:class:`~agilerl.models.ReplayBufferSpec`) describes for ``algorithm`` (its spec).
    A combination the algorithm cannot use is a ValueError naming the key."""
    algo_cls = algorithm.algo_class()
    name = algorithm.name
    if spec.per_buffer and not learns_from_priorities(algo_cls):
        raise ValueError(
            f"replay_buffer.per_buffer: prioritised replay serves RainbowDQN, whose losses "
            f"become the priorities; {name} learns from uniform batches"
        )
    if spec.per_buffer and spec.storage != "transitions":
        raise ValueError(
            f"replay_buffer.storage: {spec.storage!r} stores a uniform buffer; prioritised "
            "replay (per_buffer) stores transitions: leave storage out"
        )
    n_step_memory = None
    if spec.n_step_buffer:
        if not learns_n_step(algo_cls):
            raise ValueError(
                f"replay_buffer.n_step_buffer: {name} learns from 1-step transitions; "
                "n-step returns serve RainbowDQN"
            )
        horizon = spec.n_step_buffer_args.n_step
        if getattr(algorithm, "n_step", horizon) != horizon:
            raise ValueError(
                f"replay_buffer.n_step_buffer_args.n_step: {horizon}, but algorithm.n_step "
                f"is {algorithm.n_step}: both give the n-step horizon; make them equal"
            )
        n_step_memory = NStepReplayBuffer.from_spec(spec, gamma=algorithm.gamma, device=device)
    if spec.per_buffer:
        memory: ReplayBuffer = PrioritizedReplayBuffer.from_spec(spec, device=device)
    else:
        memory = STORAGES[spec.storage](spec.max_size, device=device)
    return memory, n_step_memory
