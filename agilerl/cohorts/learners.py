"""How the agents of one algorithm learn as a cohort, and which agents may form one.

A learner runs the algorithm's *own* code for the whole cohort: the part that calls the
networks runs once, on an agent bound to the stacked networks (and to per-row copies of
the hyperparameters that part reads), and each agent's loss is then computed by that
agent itself, on its own rows, with its own hyperparameters. The losses are summed (each
agent's gradient is its own loss's: the stacked parameters of one agent meet only its
rows), and one :class:`~agilerl.cohorts.adam.StackedAdam` step updates every agent due
to learn.

Agents of several batch sizes share a value cohort: every agent's block of a batch has
the cohort's largest size, and an agent's loss reads only its own first ``batch_size``
rows (the rest are padding, :func:`~agilerl.cohorts.replay.draw_padded`). Padding
spends the padded rows' forward and backward arithmetic; a cohort per batch size would
spend the per-operation overhead of every extra cohort instead, and on small networks
that overhead is the larger (``benchmarks/cohort_batch_sizes.py``: four DQN agents of
batch 32 to 256, 64 wide, learn a round 1.7x faster padded in one cohort than in four).

:data:`LEARNERS` says which algorithms learn in cohorts (exact classes: a subclass that
learns differently, RainbowDQN, is not covered by DQN's entry): DQN and CQN through
:class:`ValueCohort`, DDPG and TD3 through
:class:`~agilerl.cohorts.actor_critic.ActorCriticCohort`. :func:`cohort_key` says
which agents may share a cohort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.ppo import PPO
from agilerl.algorithms.td3 import TD3
from agilerl.cohorts.actor_critic import ActorCriticCohort
from agilerl.cohorts.adam import StackedAdam
from agilerl.cohorts.policy import PolicyCohort
from agilerl.cohorts.stacking import StackedNetwork, bound, stackable
from agilerl.cohorts.updates import reported, soft_update
from agilerl.observations import split_tree


class Precomputed:
    """Stands in for an agent's network while it acts: returns outputs the cohort
    computed for it in one batched forward. Never in training mode, so the agent does
    not switch modes around the call."""

    training = False

    def __init__(self, output: torch.Tensor) -> None:
        self.output = output

    def __call__(self, obs: Any) -> torch.Tensor:
        return self.output


class ValueCohort:
    """DQN-style agents (DQN, CQN) as one: ``_td`` (the networks' part) once on the
    first agent bound to the stacked online and target networks and a per-row ``gamma``;
    each agent's ``_loss`` on its rows; per-agent gradient clipping where the algorithm
    clips; one Adam step; each agent's target moved by its own ``tau``."""

    #: Attributes ``_td`` reads that must be equal across the cohort (the code path).
    same: ClassVar[tuple[str, ...]] = ("double",)

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.online = StackedNetwork([agent.actor for agent in self.agents])
        self.target = StackedNetwork([agent.actor_target for agent in self.agents], False)
        self.adam = StackedAdam(
            self.online.parameters(),
            [self.online.agent_parameters(agent.actor) for agent in self.agents],
            [agent.optimizer for agent in self.agents],
            [agent.lr for agent in self.agents],
        )
        device = self.online.parameters()[0].device
        self.gamma = torch.tensor([a.gamma for a in self.agents], device=device)
        self.tau = torch.tensor([a.tau for a in self.agents], device=device, dtype=torch.float64)
        self.max_grad_norm = self.template.max_grad_norm
        self.sizes = [int(agent.batch_size) for agent in self.agents]

    # -- acting -----------------------------------------------------------------------
    def explore(self, obs: Any, mask: Any) -> np.ndarray:
        """Every agent's exploring actions for the cohort's observations ``obs`` (agent
        ``p``'s the ``p``-th block, ``mask`` its action masks' rows alike): one forward
        for the cohort, then each agent's own ``explore`` (its epsilon, its generator, its
        action masks) on its block of the outputs."""
        count = len(self.agents)
        with torch.no_grad():
            q_values = self.online(obs)
        masks = [None] * count if mask is None else split_tree(mask, count)
        actions = []
        for agent, own, output, own_mask in zip(
            self.agents, split_tree(obs, count), split_tree(q_values, count), masks, strict=True
        ):
            with bound(agent, actor=Precomputed(output)):
                actions.append(agent.explore(own, own_mask))
        return np.concatenate(actions)

    # -- learning ---------------------------------------------------------------------
    def learn(self, batch: dict[str, Any], mask: np.ndarray) -> list[dict[str, float] | None]:
        """One learning step of the agents where ``mask`` holds, each on its block of
        ``batch`` (agent ``p``'s rows the ``p``-th); the metrics each reported (None for an
        agent that did not learn)."""
        count = len(self.agents)
        rows = int(batch["reward"].shape[0]) // count  # the largest batch size: padded
        gamma = self.gamma.repeat_interleave(rows).unsqueeze(1)
        with bound(self.template, actor=self.online, actor_target=self.target, gamma=gamma):
            q_values, index, q_taken, target = self.template._td(batch)
        live = [p for p in range(count) if mask[p]]
        total: torch.Tensor | None = None
        figures: dict[int, dict[str, torch.Tensor]] = {}
        for p in live:
            own = slice(p * rows, p * rows + self.sizes[p])  # its own draws, no padding
            loss, figs = self.agents[p]._loss(q_values[own], index[own], q_taken[own], target[own])
            figures[p] = {**figs, "q_mean": q_taken[own].detach().mean()}
            total = loss if total is None else total + loss
        if total is None:
            return [None] * count
        live_mask = torch.as_tensor(np.asarray(mask, dtype=bool), device=self.gamma.device)
        self.adam.minimise(total, live_mask, self.max_grad_norm)
        soft_update(self.target.parameters(), self.online.parameters(), self.tau, mask)
        return reported(figures, count)

    def write_back(self) -> None:
        """Every agent's weights, target weights and optimiser state back into it."""
        self.online.write_back([agent.actor for agent in self.agents])
        self.target.write_back([agent.actor_target for agent in self.agents])
        self.adam.write_back([agent.optimizer for agent in self.agents])


class Learner(Protocol):
    """What every cohort learner is: made of a cohort's agents, it names the attributes
    they must share and writes everything back into them at the end. The family's
    cohort turn drives the rest (:class:`ReplayLearner`, or
    :class:`~agilerl.cohorts.policy.PolicyCohort` for rollouts)."""

    #: Attributes of the agents that must be equal across a cohort (:func:`cohort_key`).
    same: ClassVar[tuple[str, ...]]

    def __init__(self, agents: Sequence[Any]) -> None: ...

    def write_back(self) -> None: ...


class ReplayLearner(Learner, Protocol):
    """A learner from replayed batches (:func:`~agilerl.families.single_agent.off_policy.
    lockstep_turn`, the offline turn): it acts for every agent and learns for those a
    mask names, each on its block of a batch."""

    def explore(self, obs: Any, mask: Any) -> np.ndarray: ...

    def learn(self, batch: dict[str, Any], mask: np.ndarray) -> list[dict[str, float] | None]: ...


#: Algorithm class -> its cohort learner (exact classes).
LEARNERS: dict[type, type[Learner]] = {
    DQN: ValueCohort,
    CQN: ValueCohort,
    DDPG: ActorCriticCohort,
    TD3: ActorCriticCohort,
    PPO: PolicyCohort,
}


def cohort_key(agent: Any) -> tuple[Any, ...] | None:
    """What agents must share to form a cohort, or None for an agent that trains alone:
    the algorithm (one with a learner), every network's architecture and buffers (the
    constants of its spaces, such as an actor's action bounds), the attributes its
    learner needs equal (:attr:`Learner.same`: PPO's batch size, not DQN's, whose
    batches are padded), the device; every network must be
    :func:`~agilerl.cohorts.stacking.stackable` (MLP modules holding no buffers)."""
    learner = LEARNERS.get(type(agent))
    if learner is None:
        return None
    networks = [getattr(agent, attr) for attr in agent._network_attrs()]
    if not all(stackable(net) for net in networks):
        return None
    return (
        type(agent),
        tuple(net.spec.model_dump_json() for net in networks),
        # The constants of the code around the stacked modules (an actor's action
        # bounds), which runs once with the first agent's.
        tuple(tuple(b.flatten().tolist()) for net in networks for b in net.buffers()),
        tuple(getattr(agent, name) for name in learner.same),
        str(agent.device),
    )


def form_cohorts(agents: dict[int, Any], enabled: bool = True) -> list[list[int]]:
    """The slots of ``agents`` grouped into cohorts, in slot order (a cohort's first
    slot orders it); every agent alone when not ``enabled``."""
    groups: dict[Any, list[int]] = {}
    order: list[list[int]] = []
    for slot in sorted(agents):
        key = cohort_key(agents[slot]) if enabled else None
        if key is None:
            order.append([slot])
            continue
        if key not in groups:
            groups[key] = []
            order.append(groups[key])
        groups[key].append(slot)
    return order
