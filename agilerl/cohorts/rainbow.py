"""How RainbowDQN agents learn as a cohort.

A :class:`~agilerl.cohorts.value.ValueCohort` (stacked online and target networks,
one stacked Adam, per-agent ``gamma``, ``tau`` and padded batch sizes) whose networks'
noisy streams are stacked with each agent's noise scales and current noise sample
(:class:`~agilerl.cohorts.stacking.StackedNoisyMLP`). What differs from DQN:

* **acting** is greedy on the noisy networks for every row, so the first agent's own
  ``explore`` runs once on the cohort's joined observations (nothing of it is per agent
  but the noise, which lives in the stacked networks);
* **learning** runs RainbowDQN's networks' part (``_per_transition``: the double-DQN
  target distribution projected onto the atoms, 1-step, n-step or both) once for the
  cohort with a per-row ``gamma``, then each agent's own (importance-weighted) mean on
  its rows; the per-transition losses go back to the replay as the agents' new
  priorities;
* **noise**: after its update each learning agent draws a new noise sample for its
  online and then its target network from its own generator, in the order its own
  ``reset_noise`` draws from torch's, so it sees the noise it would see alone. An agent
  not learning keeps its sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.optim import polyak_update
from agilerl.cohorts.acting import cohort_actions
from agilerl.cohorts.stacking import bound
from agilerl.cohorts.updates import reported
from agilerl.cohorts.value import ValueCohort


class RainbowCohort(ValueCohort):
    """RainbowDQN agents as one (see the module docstring)."""

    #: ``combined_reward`` decides which losses the networks' part sums.
    same: ClassVar[tuple[str, ...]] = ("combined_reward",)

    def explore(self, obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray:
        """Every agent's actions for the cohort's observations: the greedy actions of its
        noisy network (its current noise sample) on its block, in one forward (which
        draws nothing); uniform actions for the agents ``uniform`` names."""

        def forward(rows: Any) -> np.ndarray:
            with self.online.bound():
                return self.template.explore(rows, mask)

        return cohort_actions(
            self.agents, obs, mask, uniform, forward, lambda _agent, _own, _mask, out: out
        )

    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        return self.learn_prioritized(batch, mask, generators)[0]

    def learn_prioritized(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> tuple[list[dict[str, float] | None], torch.Tensor]:
        """One learning step of the agents where ``mask`` holds, each on its block of
        ``batch``; the metrics each reported (None for an agent that did not learn) and
        the loss of every row (agent ``p``'s the ``p``-th block: its new priorities)."""
        count = len(self.agents)
        rows = int(batch["reward"].shape[0]) // count  # the largest batch size: padded
        gamma = self.gamma.repeat_interleave(rows)
        with self.online.bound(), self.target.bound(), bound(self.template, gamma=gamma):
            per_transition, q_taken = self.template._per_transition(batch)
        weights = batch.get("weights")
        live = np.flatnonzero(mask).tolist()
        figures: dict[int, dict[str, torch.Tensor]] = {}
        losses = []
        for p in live:
            own = slice(p * rows, p * rows + self.sizes[p])  # its own draws, no padding
            loss = self.agents[p]._weighted_loss(
                per_transition[own], None if weights is None else weights[own]
            )
            figures[p] = {"loss": loss.detach(), "q_mean": q_taken[own].mean()}
            losses.append(loss)
        if losses:
            live_mask = torch.as_tensor(np.asarray(mask, dtype=bool), device=self.gamma.device)
            self.adam.minimise(torch.stack(losses).sum(), live_mask, self.max_grad_norm)
            polyak_update(self.target.parameters(), self.online.parameters(), self.tau, live_mask)
            for p in live:
                self.online.reset_noise(p, generators[p])
                self.target.reset_noise(p, generators[p])
        return reported(figures, count), per_transition.detach()
