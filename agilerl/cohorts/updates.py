"""What every cohort learner ends an update with: its agents' targets moved by their own
``tau``, and each agent's figures reported as its own."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from agilerl.cohorts.adam import column, multi_tensor


def soft_update(
    targets: Sequence[torch.Tensor],
    online: Sequence[torch.Tensor],
    tau: torch.Tensor,
    due: np.ndarray,
) -> None:
    """``target <- tau_p * online + (1 - tau_p) * target`` for the agents ``p`` in ``due``
    (``tau`` (P,), stacked tensors position by position); the others' rows are lerped by
    0, which leaves them bit-equal."""
    with torch.no_grad():
        weight = tau * torch.as_tensor(np.asarray(due, dtype=bool), device=tau.device).to(tau.dtype)
        multi_tensor._foreach_lerp_(
            list(targets), list(online), [column(weight, t).to(t.dtype) for t in targets]
        )


def reported(
    figures: dict[int, dict[str, torch.Tensor]], count: int
) -> list[dict[str, float] | None]:
    """Agent ``p``'s figures ``figures[p]`` as floats (one device sync for every figure of
    every agent), None for an agent of the ``count`` that reported none."""
    names = [(p, name) for p in figures for name in figures[p]]
    if not names:
        return [None] * count
    values = torch.stack([figures[p][name].detach().float() for p, name in names]).tolist()
    out: list[dict[str, float] | None] = [None] * count
    for (p, name), value in zip(names, values, strict=True):
        out[p] = {**(out[p] or {}), name: value}
    return out
