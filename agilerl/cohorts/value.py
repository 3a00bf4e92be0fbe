"""DQN-style agents (DQN, CQN) learning as a cohort: stacked online and target
networks, per-row ``gamma``, padded batch sizes, one stacked Adam step.

Agents of several batch sizes share a value cohort: every agent's block of a batch has
the cohort's largest size, and an agent's loss reads only its own first ``batch_size``
rows (the rest are padding, :func:`~agilerl.cohorts.replay.draw_padded`). Padding
spends the padded rows' forward and backward arithmetic; a cohort per batch size would
spend the per-operation overhead of every extra cohort instead, and on small networks
that overhead is the larger (``benchmarks/cohort_batch_sizes.py``: four DQN agents of
batch 32 to 256, 64 wide, learn a round 1.7x faster padded in one cohort than in four).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.optim import polyak_update
from agilerl.cohorts.acting import cohort_actions
from agilerl.cohorts.adam import StackedAdam
from agilerl.cohorts.stacking import StackedNetwork, bound
from agilerl.cohorts.updates import reported


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
    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray:
        """Every agent's exploring actions for the cohort's observations ``obs`` (agent
        ``p``'s the ``p``-th block, ``mask`` its action masks' rows alike): one forward
        for the cohort, then each agent's own ``explore`` (its epsilon, its generator, its
        action masks) on its block of the outputs; uniform actions for the agents
        ``uniform`` names (:func:`~agilerl.cohorts.acting.cohort_actions`)."""

        def forward(rows: Any) -> torch.Tensor:
            with torch.no_grad():
                return self.online(rows)

        def own_action(agent: Any, own: Any, own_mask: Any, output: Any) -> np.ndarray:
            with bound(agent, actor=Precomputed(output)):
                return agent.explore(own, own_mask)

        return cohort_actions(self.agents, obs, mask, uniform, forward, own_action)

    # -- learning ---------------------------------------------------------------------
    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        """One learning step of the agents where ``mask`` holds, each on its block of
        ``batch`` (agent ``p``'s rows the ``p``-th); the metrics each reported (None for an
        agent that did not learn). DQN and CQN draw nothing as they learn
        (``generators``, the agents' own, serve learners that do)."""
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
        polyak_update(self.target.parameters(), self.online.parameters(), self.tau, live_mask)
        return reported(figures, count)

    def write_back(self) -> None:
        """Every agent's weights, target weights and optimiser state back into it."""
        self.online.write_back([agent.actor for agent in self.agents])
        self.target.write_back([agent.actor_target for agent in self.agents])
        self.adam.write_back([agent.optimizer for agent in self.agents])
