"""IPPO's team cohort (:class:`~agilerl.cohorts.team_policy.TeamPolicyCohort`) on PPO's
epochs: its teams' settings as columns (:class:`OwnSettings`) and its call of
:func:`~agilerl.algorithms.ppo.learning_epochs` with a stacked Adam. The epochs, the
minibatch orders and the per-agent loss are PPO's own (:mod:`agilerl.algorithms.ppo`);
this module only adapts them until IPPO writes its update against a view.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.optim import StackedAdam
from agilerl.algorithms.ppo import (
    EpochFigures,
    joined_minibatches,
    joined_ppo_loss,
    learning_epochs,
    stepping_total,
)

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


def ppo_epochs(
    where: torch.Tensor,
    batch_size: int,
    own: OwnSettings,
    generators: Sequence[torch.Generator],
    minibatch: Minibatch,
    adam: StackedAdam,
) -> EpochFigures:
    """The epochs of P agents' PPO updates (:func:`~agilerl.algorithms.ppo.
    learning_epochs`) stepping ``adam``. ``where[p, i]``: the joined row of agent
    ``p``'s sample ``i`` (``(P, size)``); ``own`` and ``generators``: each agent's own."""
    device = adam.params[0].device

    def minimise(losses: torch.Tensor, step: np.ndarray) -> None:
        live = None if step.all() else torch.as_tensor(step, device=device)
        adam.minimise(stepping_total(losses, live), live, own.max_grad_norm)

    return learning_epochs(
        own.update_epochs,
        own.target_kl,
        lambda active: joined_minibatches(where, batch_size, generators, active),
        lambda index: minibatch(index.to(device)),
        minimise,
    )


def cohort_ppo_loss(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    batch: Any,
    count: int,
    own: OwnSettings,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each of ``count`` agents' PPO loss ``(P,)`` and metrics ``(len(METRICS), P)`` of
    a joined minibatch: :func:`~agilerl.algorithms.ppo.joined_ppo_loss` with each
    agent's own coefficients."""
    return joined_ppo_loss(
        log_prob, entropy, value, batch, count, own.clip_coef, own.ent_coef, own.vf_coef
    )
