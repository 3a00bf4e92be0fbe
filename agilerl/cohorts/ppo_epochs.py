"""The epochs of a cohort's PPO update, shared by every cohort of PPO's loss (PPO's
:class:`~agilerl.cohorts.policy.PolicyCohort`, IPPO's
:class:`~agilerl.cohorts.team_policy.TeamPolicyCohort`).

Each agent draws its own order of its ``size`` samples per epoch from its own generator
(only while it still learns, as its own ``learn`` draws one per epoch it runs), minibatch
``k`` of every agent is one joined minibatch through the stacked networks, and one
stacked Adam step updates the agents that step on it. ``target_kl`` stops each agent on
its own: the minibatch whose KL exceeded it is measured but not stepped on, and the
agent is masked out of the steps after it (weights and Adam moments untouched); an agent
of fewer ``update_epochs`` is masked out the same way once its epochs are done.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.optim import StackedAdam
from agilerl.algorithms.ppo import METRICS, clipped_ppo_loss

#: ``minibatch(index) -> (loss (P,), metrics (len(METRICS), P))`` of the joined rows
#: ``index`` (agent ``p``'s rows the ``p``-th block).
Minibatch = Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class OwnSettings:
    """Each agent's own settings of a PPO update, as a cohort reads them."""

    clip_coef: torch.Tensor  # (P, 1)
    ent_coef: torch.Tensor  # (P, 1)
    vf_coef: torch.Tensor  # (P, 1)
    max_grad_norm: torch.Tensor  # (P,)
    target_kl: list[float | None]
    update_epochs: list[int]

    @classmethod
    def of(cls, agents: Sequence[Any], device: torch.device) -> OwnSettings:
        def column(name: str) -> torch.Tensor:
            return torch.tensor([float(getattr(a, name)) for a in agents], device=device)

        return cls(
            column("clip_coef").unsqueeze(1),
            column("ent_coef").unsqueeze(1),
            column("vf_coef").unsqueeze(1),
            column("max_grad_norm"),
            [agent.target_kl for agent in agents],
            [int(agent.update_epochs) for agent in agents],
        )


@dataclass
class EpochFigures:
    """What a cohort's epochs did, per agent."""

    totals: torch.Tensor  # (len(METRICS), P): summed over the minibatches it evaluated
    evaluated: np.ndarray  # (P,) minibatches evaluated
    updates: np.ndarray  # (P,) optimiser steps taken
    stopped: np.ndarray  # (P,) bool: its target_kl ended its epochs

    def means(self) -> torch.Tensor:
        """``(len(METRICS), P)``: each agent's mean of every figure of
        :data:`~agilerl.algorithms.ppo.METRICS` over the minibatches it evaluated (zeros
        where it evaluated none)."""
        evaluated = torch.as_tensor(np.maximum(self.evaluated, 1), device=self.totals.device)
        return self.totals / evaluated

    def metrics(self) -> list[dict[str, float]]:
        """Each agent's figures as its own PPO ``learn`` reports them."""
        return [
            {
                **dict(zip(METRICS, means, strict=True)),
                "updates": float(self.updates[p]),
                "early_stop": float(self.stopped[p]),
            }
            for p, means in enumerate(self.means().T.tolist())
        ]


def ppo_epochs(
    where: torch.Tensor,
    batch_size: int,
    own: OwnSettings,
    generators: Sequence[torch.Generator],
    minibatch: Minibatch,
    adam: StackedAdam,
) -> EpochFigures:
    """The epochs of P agents' PPO updates (module docstring). ``where[p, i]``: the
    joined row of agent ``p``'s sample ``i`` (``(P, size)``, every agent ``size``
    samples); ``own`` and ``generators``: each agent's own."""
    count, size = where.shape
    device = adam.params[0].device
    target_kl, max_grad_norm = own.target_kl, own.max_grad_norm
    epochs_left = np.asarray(own.update_epochs)
    stopped = np.zeros(count, dtype=bool)
    totals = torch.zeros(len(METRICS), count, device=device)
    evaluated = np.zeros(count)
    updates = np.zeros(count)
    kl_index = METRICS.index("approx_kl")
    watch_kl = any(limit is not None for limit in target_kl)
    limits = np.array([np.inf if limit is None else limit for limit in target_kl])
    unused = torch.arange(size)  # the order of an agent that has finished
    for epoch in range(int(epochs_left.max())):
        active = ~stopped & (epoch < epochs_left)
        if not active.any():
            break
        # Only an agent still learning draws its order, as its own learn would.
        orders = torch.stack(
            [
                torch.randperm(size, generator=g) if active[p] else unused
                for p, g in enumerate(generators)
            ]
        )
        for start in range(0, size, batch_size):
            if not active.any():
                break
            index = where.gather(1, orders[:, start : start + batch_size]).reshape(-1)
            loss, stats = minibatch(index.to(device))
            totals += stats * torch.as_tensor(active, device=device)
            evaluated += active
            step = active.copy()
            if watch_kl:
                # One read of every agent's KL decides which of them step: the
                # minibatch that exceeded it is measured, not stepped on.
                exceeded = active & (stats[kl_index].cpu().numpy() > limits)
                stopped |= exceeded
                step &= ~exceeded
            if step.any():
                stepping = torch.as_tensor(step, device=device)
                adam.minimise((loss * stepping).sum(), stepping, max_grad_norm)
                updates += step
            active = step
    return EpochFigures(totals, evaluated, updates, stopped)


def cohort_ppo_loss(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    batch: Any,
    count: int,
    own: OwnSettings,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each of ``count`` agents' PPO loss ``(P,)`` and metrics ``(len(METRICS), P)`` of
    a joined minibatch (agent ``p``'s rows the ``p``-th block of ``batch``, a dataclass
    with ``log_probs``, ``advantages``, ``values`` and ``returns``, and of the stacked
    networks' ``log_prob``, ``entropy`` and ``value``): :func:`~agilerl.algorithms.ppo.
    clipped_ppo_loss` reducing each agent's rows with its own ``clip_coef``,
    ``ent_coef`` and ``vf_coef``."""

    def agent_rows(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(count, -1)

    rows = replace(
        batch,
        log_probs=agent_rows(batch.log_probs),
        advantages=agent_rows(batch.advantages),
        values=agent_rows(batch.values),
        returns=agent_rows(batch.returns),
    )
    return clipped_ppo_loss(
        agent_rows(log_prob), agent_rows(entropy), agent_rows(value), rows,
        own.clip_coef, own.ent_coef, own.vf_coef,
    )  # fmt: skip
