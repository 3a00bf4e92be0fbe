"""How the agents of one algorithm learn as a cohort, and which agents may form one.

A learner runs the algorithm's *own* code for the whole cohort: the part that calls the
networks runs once, on an agent bound to the stacked networks (and to per-row copies of
the hyperparameters that part reads), and each agent's loss is then computed by that
agent itself, on its own rows, with its own hyperparameters. The losses are summed (each
agent's gradient is its own loss's: the stacked parameters of one agent meet only its
rows), and one :class:`~agilerl.cohorts.adam.StackedAdam` step updates every agent due
to learn.

:data:`LEARNERS` says which algorithms learn in cohorts, and how (exact classes: a
subclass that learns differently, RainbowDQN, has its own entry): DQN and CQN through
:class:`~agilerl.cohorts.value.ValueCohort`, RainbowDQN through
:class:`~agilerl.cohorts.rainbow.RainbowCohort`, DDPG and TD3 through
:class:`~agilerl.cohorts.actor_critic.ActorCriticCohort`, PPO through
:class:`~agilerl.cohorts.policy.PolicyCohort`, IPPO's teams through
:class:`~agilerl.cohorts.team_policy.TeamPolicyCohort`, MADDPG's and MATD3's through
:class:`~agilerl.cohorts.team_actor_critic.TeamActorCriticCohort`. :func:`cohort_key` says which
agents may share a cohort.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.ippo import IPPO
from agilerl.algorithms.maddpg import MADDPG
from agilerl.algorithms.matd3 import MATD3
from agilerl.algorithms.ppo import PPO
from agilerl.algorithms.rainbow_dqn import RainbowDQN
from agilerl.algorithms.td3 import TD3
from agilerl.cohorts.actor_critic import ActorCriticCohort
from agilerl.cohorts.policy import PolicyCohort
from agilerl.cohorts.rainbow import RainbowCohort
from agilerl.cohorts.stacking import outside_buffers, stackable
from agilerl.cohorts.team_actor_critic import TeamActorCriticCohort
from agilerl.cohorts.team_policy import TeamPolicyCohort
from agilerl.cohorts.value import ValueCohort


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
    lockstep_turn`, the offline turn): it acts for every agent (uniformly at random for
    those ``uniform`` names: :mod:`~agilerl.cohorts.acting`) and learns for those a mask
    names, each on its block of a batch."""

    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray: ...

    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]: ...


class PrioritizedLearner(ReplayLearner, Protocol):
    """A replay learner whose per-row losses become the priorities of the rows it drew
    (RainbowDQN's), as an agent's ``learn_prioritized`` returns them."""

    def learn_prioritized(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[list[dict[str, float] | None], torch.Tensor]: ...


#: Algorithm class -> its cohort learner (exact classes).
LEARNERS: dict[type, type[Learner]] = {
    DQN: ValueCohort,
    CQN: ValueCohort,
    RainbowDQN: RainbowCohort,
    DDPG: ActorCriticCohort,
    TD3: ActorCriticCohort,
    PPO: PolicyCohort,
    IPPO: TeamPolicyCohort,
    MADDPG: TeamActorCriticCohort,
    MATD3: TeamActorCriticCohort,
}


#: Attributes that, set on an agent, keep it alone: running normalisation statistics are
#: each agent's own (and the stacked code runs the first agent's preprocessing for every
#: row); IPPO's ``action_batch_size`` bounds the rows of one forward, where a cohort acts
#: for all its teams' rows at once.
ALONE_IF = ("normalization", "action_batch_size")


def cohort_key(agent: Any) -> tuple[Any, ...] | None:
    """What agents must share to form a cohort, or None for an agent that trains alone
    (one holding an attribute of :data:`ALONE_IF`): the algorithm (one
    with a learner), every network's architecture and buffers (the
    constants of its spaces, such as an actor's action bounds), the attributes its
    learner needs equal (:attr:`Learner.same`: PPO's batch size, not DQN's, whose
    batches are padded), the device; every network must be
    :func:`~agilerl.cohorts.stacking.stackable` (MLP modules holding no buffers)."""
    learner = LEARNERS.get(type(agent))
    if learner is None or any(getattr(agent, name, None) is not None for name in ALONE_IF):
        return None
    networks = [getattr(agent, attr) for attr in agent._network_attrs()]
    if not all(stackable(net) for net in networks):
        return None
    return (
        type(agent),
        tuple(net.spec.model_dump_json() for net in networks),
        # The constants of the code around the stacked modules (an actor's action
        # bounds), which runs once with the first agent's.
        tuple(tuple(b.flatten().tolist()) for net in networks for b in outside_buffers(net)),
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
