"""The stacked view of a cohort of teams (IPPO, MADDPG, MATD3): P teams' networks,
targets and optimisers held as one :class:`~agilerl.cohorts.views.StackedPopulation`
(every network, target and optimiser a team's ``eval_networks``, ``target_networks`` and
``optimizer_specs`` name, per group), with the teams' row layout.

A team batches an agent group member by member; a cohort's batch holds team ``p``'s
rows as the ``p``-th block of every agent's, so a group's batch is ``member, team,
row``, and the stacked networks take it ``team, member, row``
(:mod:`agilerl.cohorts.team_rows`). :class:`TeamPopulation` moves a group's batch
between the two, says where each team's own rows lie, and joins each team's own random
draws; :class:`TeamBlock` is a team's block of a cohort's rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from agilerl.algorithms.core.population import own_size
from agilerl.algorithms.multi_agent_actor_critic import leading
from agilerl.cohorts.team_rows import joined, own_rows, team_major
from agilerl.cohorts.views import StackedPopulation
from agilerl.components.observations import map_tree


class TeamPopulation(StackedPopulation):
    """P teams on stacked networks (see the module docstring)."""

    def _orders(self, tree: Any, members: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = leading(tree) // (members * self.count)  # each team's rows per member
        return team_major(members, self.count, rows)

    def team_major(self, tree: Any, members: int) -> Any:
        return _reordered(tree, self._orders(tree, members)[0])

    def member_major(self, tree: Any, members: int) -> Any:
        return _reordered(tree, self._orders(tree, members)[1])

    def team_blocks(
        self, batch_rows: int, members: int, live: np.ndarray | None = None
    ) -> list[tuple[int, Any]]:
        rows = batch_rows // (members * self.count)
        return [
            (p, own_rows(members, self.count, rows, p, own_size(team, rows)).to(self.device))
            for p, team in enumerate(self.agents)
            if live is None or live[p]
        ]

    def team_drawn(
        self,
        draw: Callable[[Any, int], np.ndarray],
        total: int,
        members: int,
        live: np.ndarray | None = None,
        whole: bool = False,
    ) -> np.ndarray:
        rows = total // (members * self.count)
        sizes = [
            0 if live is not None and not live[p] else rows if whole else own_size(team, rows)
            for p, team in enumerate(self.agents)
        ]
        parts = [
            draw(team, members * size) if size else None
            for team, size in zip(self.agents, sizes, strict=True)
        ]
        return joined(parts, members, rows)

    def team_rollout(self, rollout: Any, p: int) -> Any:
        return TeamBlock(rollout, p, rollout.num_envs // self.count)

    def team_copies(self, values: dict[str, Any], p: int) -> dict[str, Any]:
        def block(v: Any) -> Any:
            n = len(v) // self.count
            return v[p * n : (p + 1) * n]

        return {agent: block(v) for agent, v in values.items()}

    @contextmanager
    def own_networks(self) -> Iterator[None]:
        """Every team's weights and optimiser states written back for the length of the
        block, then stacked again from the teams (what they learnt on their own)."""
        self.write_back()
        yield
        StackedPopulation.__init__(self, self.agents)


def _reordered(tree: Any, order: torch.Tensor) -> Any:
    """Every leaf of ``tree`` (tensors or arrays) in row order ``order``."""

    def rows(x: Any) -> Any:
        return x[order.numpy()] if isinstance(x, np.ndarray) else x[order.to(x.device)]

    return map_tree(rows, tree)


class TeamBlock:
    """Team ``p``'s block of a cohort's rollout: every field sliced to its ``per_team``
    copies, read as the team's own rollout (``[T, per_team, ...]`` per agent id)."""

    def __init__(self, rollout: Any, p: int, per_team: int) -> None:
        self.rollout = rollout
        self.columns = slice(p * per_team, (p + 1) * per_team)

    def __getattr__(self, name: str) -> Any:
        if name in ("rollout", "columns"):  # not yet set (copying, unpickling)
            raise AttributeError(name)
        return map_tree(lambda x: x[:, self.columns], getattr(self.rollout, name))
