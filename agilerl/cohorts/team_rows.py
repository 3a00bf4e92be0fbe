"""How the rows of a cohort of teams are laid out, and moved between layouts.

A team of a multi-agent algorithm batches an agent group *member by member*: the group's
rows are ``[members * n]``, member ``m``'s the ``m``-th block. A cohort's batch holds
every team's rows per agent, team ``p``'s the ``p``-th block, so the group's code, run
once on it, sees ``member, team, row`` order. Its stacked networks need each team's rows
as one block, ``team, member, row`` (:mod:`agilerl.cohorts.stacking`): :func:`team_major`
gives that order and its inverse. :func:`joined` and :func:`own_rows` move between one
team's member-major rows and the cohort's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def team_major(members: int, teams: int, rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The row order that takes a group's batch from ``member, team, row`` order to
    ``team, member, row`` order, and the one that takes it back."""
    order = torch.arange(members * teams * rows)
    order = order.reshape(members, teams, rows).transpose(0, 1).reshape(-1)
    return order, torch.argsort(order)


def own_rows(members: int, teams: int, rows: int, team: int, size: int) -> torch.Tensor:
    """Where team ``team``'s first ``size`` rows of each member lie in a cohort's group
    batch (``member, team, row`` order, ``rows`` per team), in its own member-major
    order."""
    base = torch.arange(members) * (teams * rows) + team * rows
    return (base.unsqueeze(1) + torch.arange(size)).reshape(-1)


def joined(parts: Sequence[np.ndarray | None], members: int, rows: int) -> np.ndarray:
    """Per-team arrays, team ``p``'s ``[members * size_p, ...]`` in its member-major
    order (None: a team that draws nothing), as one ``[members * teams * rows, ...]``
    array of the cohort's group batch; rows a team did not fill are zeros."""
    given = next(part for part in parts if part is not None)
    out = np.zeros((members, len(parts), rows, *given.shape[1:]), dtype=given.dtype)
    for p, part in enumerate(parts):
        if part is not None:
            out[:, p, : part.shape[0] // members] = part.reshape(members, -1, *part.shape[1:])
    return out.reshape(-1, *given.shape[1:])
