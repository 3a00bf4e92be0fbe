"""What every cohort learner ends an update with: each agent's figures reported as its
own (its targets move by :func:`~agilerl.algorithms.optim.polyak_update`)."""

from __future__ import annotations

import torch


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
