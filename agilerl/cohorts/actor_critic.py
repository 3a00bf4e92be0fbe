"""DDPG-style agents (DDPG, TD3) learning as one cohort.

The learner runs the agents' own code (:class:`~agilerl.algorithms.ddpg.DDPG`) once for
the cohort, on the first agent with its networks' modules bound to the stacked ones:
``_critic_values`` (the TD targets, target policy smoothing included, and every critic's
``Q``) and ``_policy_values`` (the first critic's ``Q`` of the actor's actions). Each
agent then computes its own losses on its rows (``_critic_loss``, ``_actor_loss``); the
losses are summed, every agent's gradients are clipped to the algorithm's norm on their
own, and one :class:`~agilerl.cohorts.adam.StackedAdam` step per optimiser (the critics'
and the actor's, each agent with its ``lr_critic`` and ``lr_actor``) updates the agents
due. What stays each agent's own:

* ``gamma`` (per row of the TD target) and ``tau`` (per agent of the target update);
* the smoothing noise on the target actor's actions, drawn by each agent's ``_smoothing``
  from its own generator for its own rows (an agent not learning draws nothing), so what
  an agent draws does not depend on its cohort;
* ``policy_freq``: each agent counts its own learning calls (``learn_counter``); an agent
  whose actor update is not due on a call is masked out of the actor step and the target
  update, so its actor, its actor optimiser's moments and its targets stay bit-equal
  while its critics step;
* exploration: one forward of the stacked actor, then each agent's own ``explore`` (its
  noise process, its generator) on its block of the actor's actions.

``share_encoders``: the critics' stacked networks run the actor's stacked encoder
(:class:`~agilerl.cohorts.stacking.StackedNetwork`'s ``shared``) without owning it; the
critics' optimiser covers it (the critic loss trains it), the actor's does not (its
update reads detached features), as for each agent alone.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from agilerl.algorithms.optim import polyak_update
from agilerl.cohorts.acting import cohort_actions
from agilerl.cohorts.adam import StackedAdam
from agilerl.cohorts.stacking import Stacked, StackedNetwork, bound
from agilerl.cohorts.team_rows import joined
from agilerl.cohorts.updates import reported


class ActorCriticCohort:
    """DDPG and TD3 agents as one (module docstring)."""

    #: Attributes the networks' part reads that must be equal across the cohort:
    #: ``share_encoders`` decides which modules the critics run (their own encoder or the
    #: actor's) and which parameters each optimiser holds, so agents that differ in it
    #: run different code and cannot share one forward; ``max_grad_norm`` is the one clip
    #: of the cohort's stacked step.
    same: ClassVar[tuple[str, ...]] = ("share_encoders", "max_grad_norm")

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.critics = self.template.critics
        share = bool(self.template.share_encoders)
        self.actor = StackedNetwork([agent.actor for agent in self.agents])
        shared = {"encoder": self.actor.owned["encoder"]} if share else None
        self.online = {
            name: StackedNetwork([getattr(agent, name) for agent in self.agents], shared=shared)
            for name in self.critics
        }
        self.online["actor"] = self.actor
        self.targets = {
            target: StackedNetwork([getattr(agent, target) for agent in self.agents], False)
            for target in self.template.target_networks
        }
        # The critics' optimiser: every critic's own modules, and the shared encoder.
        critic_parts = [
            (stacked, [getattr(agent, name).stacking_parts()[module] for agent in self.agents])
            for name in self.critics
            for module, stacked in self.online[name].owned.items()
        ]
        if share:
            critic_parts.append(
                (self.actor.owned["encoder"], [agent.actor.encoder for agent in self.agents])
            )
        # The actor's: its modules, less a shared encoder (no actor gradient reaches it).
        actor_parts = [
            (stacked, [agent.actor.stacking_parts()[module] for agent in self.agents])
            for module, stacked in self.actor.owned.items()
            if not (share and module == "encoder")
        ]
        self.critic_adam = _adam(critic_parts, self.agents, "critic_optimizer", "lr_critic")
        self.actor_adam = _adam(actor_parts, self.agents, "actor_optimizer", "lr_actor")
        device = self.actor.parameters()[0].device
        self.gamma = torch.tensor([a.gamma for a in self.agents], device=device)
        self.tau = torch.tensor([a.tau for a in self.agents], device=device, dtype=torch.float64)
        self.max_grad_norm = self.template.max_grad_norm
        self.sizes = [int(agent.batch_size) for agent in self.agents]
        # Position by position: every target's parameters and its online network's.
        self.polyak_targets: list[nn.Parameter] = []
        self.polyak_online: list[nn.Parameter] = []
        for target, source in self.template.target_networks.items():
            self.polyak_targets += self.targets[target].all_parameters()
            self.polyak_online += self.online[source].all_parameters()

    @contextmanager
    def _networks(self, **attributes: Any) -> Iterator[None]:
        """The template agent's networks running on the stacked modules (and ``attributes``
        of the agent bound) for the length of the block."""
        with ExitStack() as stack:
            for stacked in [*self.online.values(), *self.targets.values()]:
                stack.enter_context(stacked.bound())
            stack.enter_context(bound(self.template, **attributes))
            yield

    # -- acting -----------------------------------------------------------------------
    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray:
        """Every agent's exploring actions for the cohort's observations ``obs`` (agent
        ``p``'s the ``p``-th block): one forward of the stacked actor, then each agent's
        own ``explore`` (its noise state, its generator) on its block of the actor's
        actions (``mask`` is for discrete actions; a Box has none); uniform actions for
        the agents ``uniform`` names (:func:`~agilerl.cohorts.acting.cohort_actions`)."""

        def forward(rows: Any) -> np.ndarray:
            with self.actor.bound():
                return self.template._policy(rows)

        def own_action(agent: Any, own: Any, own_mask: Any, block: Any) -> np.ndarray:
            with bound(agent, _policy=lambda _obs: block):
                return agent.explore(own)

        return cohort_actions(self.agents, obs, mask, uniform, forward, own_action)

    # -- learning ---------------------------------------------------------------------
    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        """One learning call of the agents where ``mask`` holds, each on its block of
        ``batch`` (agent ``p``'s rows the ``p``-th): every such agent's critics step, and
        its actor and targets where its ``policy_freq`` says so. Returns the metrics each
        agent reported (None for an agent that did not learn). TD3's smoothing noise
        comes from each agent's own noise generator, not ``generators``."""
        count = len(self.agents)
        rows = int(batch["reward"].shape[0]) // count
        live = np.asarray(mask, dtype=bool)
        device = self.gamma.device
        # Each agent's own draws; the rest of its block is padding (a larger batch size
        # of the cohort), which no loss reads.
        blocks = [slice(p * rows, p * rows + size) for p, size in enumerate(self.sizes)]
        gamma = self.gamma.repeat_interleave(rows)
        with self._networks(gamma=gamma, _smoothing=self._smoothing(live, rows)):
            x, qs, target = self.template._critic_values(batch)
        figures: dict[int, dict[str, torch.Tensor]] = {}
        losses = []
        for p in np.flatnonzero(live).tolist():
            own = blocks[p]
            loss = self.agents[p]._critic_loss([q[own] for q in qs], target[own])
            figures[p] = {"critic_loss": loss.detach(), "q_mean": qs[0][own].detach().mean()}
            losses.append(loss)
        if not losses:
            return [None] * count
        self.critic_adam.minimise(
            torch.stack(losses).sum(), torch.as_tensor(live, device=device), self.max_grad_norm
        )
        for p in np.flatnonzero(live).tolist():
            self.agents[p].learn_counter += 1
        due = live & np.array([a.learn_counter % a.policy_freq == 0 for a in self.agents])
        if due.any():
            with self._networks():
                values = self.template._policy_values(x)
            losses = []
            for p in np.flatnonzero(due).tolist():
                loss = self.agents[p]._actor_loss(values[blocks[p]])
                figures[p]["actor_loss"] = loss.detach()
                losses.append(loss)
            due_mask = torch.as_tensor(due, device=device)
            self.actor_adam.minimise(torch.stack(losses).sum(), due_mask, self.max_grad_norm)
            polyak_update(self.polyak_targets, self.polyak_online, self.tau, due_mask)
        return reported(figures, count)

    def _smoothing(self, live: np.ndarray, rows: int) -> Any:
        """The cohort's ``_smoothing``: each learning agent's own draws for its rows,
        zeros for the rows of an agent that does not learn (it draws nothing)."""

        # Each agent's own method, taken before the first agent's is bound to ``draw``.
        own = [agent._smoothing for agent in self.agents]

        def draw(shape: tuple[int, ...]) -> np.ndarray:
            # Its own rows drawn as alone; padding rows (and an agent not learning) get none.
            parts = [
                smoothing((size, *shape[1:])) if on else None
                for smoothing, on, size in zip(own, live, self.sizes, strict=True)
            ]
            return joined(parts, 1, rows)

        return draw

    def write_back(self) -> None:
        """Every agent's weights, target weights and both optimisers' state back into it."""
        for name, stacked in self.online.items():
            stacked.write_back([getattr(agent, name) for agent in self.agents])
        for name, stacked in self.targets.items():
            stacked.write_back([getattr(agent, name) for agent in self.agents])
        self.critic_adam.write_back([agent.critic_optimizer for agent in self.agents])
        self.actor_adam.write_back([agent.actor_optimizer for agent in self.agents])


def _adam(
    parts: Sequence[tuple[Stacked, Sequence[nn.Module]]],
    agents: list[Any],
    optimizer: str,
    lr: str,
) -> StackedAdam:
    """A stacked Adam over ``parts`` (each a stacked module and the agents' own modules
    it stacks), read from each agent's ``optimizer`` at its own ``lr``."""
    params = [t for stacked, _ in parts for t in stacked.stacked]
    own = [
        [
            dict(modules[p].named_parameters())[name]
            for stacked, modules in parts
            for name in stacked.names
        ]
        for p in range(len(agents))
    ]
    return StackedAdam(
        params,
        own,
        [getattr(agent, optimizer) for agent in agents],
        [getattr(agent, lr) for agent in agents],
    )
