"""How the agents of one algorithm learn as a cohort, and which agents may form one.

An algorithm that trains in cohorts writes its learning step once, against a view of P
agents (:class:`~agilerl.algorithms.core.population.Population`): ``update(view, batch,
live, generators)``, and its acting as ``act(view, obs, mask, uniform)``; its ``learn``
is the update of a view of one. A cohort is that algorithm's code run on the stacked view
of its agents (:class:`~agilerl.cohorts.views.StackedPopulation`); it never calls the
algorithm's private methods nor rebinds its attributes.

Which algorithms learn in cohorts, each declares itself
(:attr:`~agilerl.algorithms.core.evolvable.EvolvableAlgorithm.learns_in_cohorts`: DQN,
CQN, RainbowDQN, DDPG, TD3, PPO, IPPO, MADDPG, MATD3); :func:`can_join` says which
agents can train in a cohort at all, :func:`cohort_key` which may share one. Each family
builds its cohort class itself: :class:`ReplayCohort` for the replayed batches of DQN,
CQN, RainbowDQN, DDPG and TD3, :class:`~agilerl.cohorts.policy.PolicyCohort` for PPO,
:class:`~agilerl.cohorts.team_policy.TeamPolicyCohort` for IPPO's teams,
:class:`~agilerl.cohorts.team_actor_critic.TeamActorCriticCohort` for MADDPG's and
MATD3's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch

from agilerl.cohorts.stacking import outside_buffers, stackable
from agilerl.cohorts.views import StackedPopulation


class ReplayLearner(Protocol):
    """A learner from replayed batches (what :class:`~agilerl.cohorts.replay.
    LockstepReplay` drives): it acts for every agent (uniformly at random for those
    ``uniform`` names) and learns for those a mask names, each on its block of a batch;
    at the end it writes everything back into the agents."""

    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray: ...

    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]: ...

    def write_back(self) -> None: ...


class PrioritizedLearner(ReplayLearner, Protocol):
    """A replay learner whose per-row losses become the priorities of the rows it drew
    (RainbowDQN's), as an agent's ``learn_prioritized`` returns them."""

    def learn_prioritized(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[list[dict[str, float] | None], torch.Tensor]: ...


class ReplayCohort:
    """Agents of an algorithm with a population update (``update``, ``act``) learning from
    replayed batches as one: its code on the stacked view of the agents."""

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.view = StackedPopulation(self.agents)

    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray:
        """Every agent's actions for the cohort's observations (agent ``p``'s the ``p``-th
        block): the algorithm's ``act`` on the stacked view."""
        return self.template.act(self.view, obs, mask, uniform)

    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        """One learning step of the agents where ``mask`` holds, each on its block of
        ``batch``: the algorithm's ``update`` on the stacked view."""
        return self.template.update(self.view, batch, np.asarray(mask, dtype=bool), generators)

    def learn_prioritized(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[list[dict[str, float] | None], torch.Tensor]:
        """As :meth:`learn`, with the loss of every row (the agents' new priorities)."""
        live = np.asarray(mask, dtype=bool)
        return self.template.update_prioritized(self.view, batch, live, generators)

    def write_back(self) -> None:
        """Every agent's weights, target weights and optimiser state back into it."""
        self.view.write_back()


#: Attributes that, set on an agent, keep it alone: running normalisation statistics are
#: each agent's own (and the stacked code runs the first agent's preprocessing for every
#: row); IPPO's ``action_batch_size`` bounds the rows of one forward, where a cohort acts
#: for all its teams' rows at once.
ALONE_IF = ("normalization", "action_batch_size")


def can_join(agent: Any) -> bool:
    """Whether ``agent`` can train in a cohort at all: its algorithm says it learns in
    cohorts (``learns_in_cohorts``), none of :data:`ALONE_IF` is set, and every network
    can be stacked (:func:`~agilerl.cohorts.stacking.stackable`). Reads no values (the
    pre-flight asks it of an agent on the meta device)."""
    if not agent.learns_in_cohorts:
        return False
    if any(getattr(agent, name, None) is not None for name in ALONE_IF):
        return False
    return all(stackable(getattr(agent, attr)) for attr in agent._network_attrs())


def cohort_key(agent: Any) -> tuple[Any, ...] | None:
    """What agents must share to form a cohort, or None for an agent that trains alone
    (:func:`can_join`): the algorithm, every network's architecture and buffers (the
    constants of its spaces, such as an actor's action bounds), the attributes its update
    reads from the first agent for all (the algorithm's ``cohort_same``: PPO's batch
    size, not DQN's, whose batches are padded), the device."""
    if not can_join(agent):
        return None
    networks = [getattr(agent, attr) for attr in agent._network_attrs()]
    return (
        type(agent),
        tuple(net.spec.model_dump_json() for net in networks),
        # The constants of the code around the stacked modules (an actor's action
        # bounds), which runs once with the first agent's.
        tuple(tuple(b.flatten().tolist()) for net in networks for b in outside_buffers(net)),
        tuple(getattr(agent, name) for name in getattr(agent, "cohort_same", ())),
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
