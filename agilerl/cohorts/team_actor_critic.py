"""MADDPG and MATD3 teams as one cohort: every team acts with one forward per agent group,
and learns with one loss and one optimiser step per group and optimiser.

A team (:class:`~agilerl.algorithms.maddpg.MADDPG`) holds, per agent group, an actor,
its centralised critics (MATD3 has two), their targets and an Adam optimiser for the
actor and one for the critics. The cohort stacks each of them across its P teams
(:class:`_GroupNets`) and runs the template team's own code once on every team's rows:
acting (``_act``), and the networks' parts of a learning step
(:meth:`~agilerl.algorithms.maddpg.MADDPG.learning_inputs`, ``critic_values``,
``policy_values``). A team's code batches a group member by member; the cohort's batch
holds team ``p``'s rows as the ``p``-th block of every agent's, so each call of a
group's actors or critics is reordered team by team for the stacked networks and back
(:mod:`agilerl.cohorts.team_rows`).

What stays each team's own:

* its losses (``critic_loss``, ``actor_loss``: masked means over its own active rows),
  gradient clip and learning rates (one :class:`~agilerl.algorithms.optim.StackedAdam` step
  per group and optimiser for the teams learning);
* ``gamma`` (per row of the TD targets) and ``tau`` (per team of the target update);
* ``batch_size``: each team draws its own rows (a larger one pads the others' blocks,
  which no loss reads);
* ``policy_freq``: each team counts its own learning calls; a team whose actor update
  is not due is masked out of the actor steps and the target update;
* its exploration noise (Box actions: its noise state and generator) and MATD3's target
  smoothing noise, drawn by the team's own methods for its own rows, so what a team
  draws does not depend on its cohort. Categorical actions are sampled (and relaxed for
  the actor update) from torch's global generator, which the generation loop seeds per
  cohort.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.core.population import reported
from agilerl.algorithms.multi_agent_actor_critic import leading, masked_mean
from agilerl.algorithms.optim import StackedAdam, polyak_update
from agilerl.cohorts.stacking import StackedNetwork, bound
from agilerl.cohorts.team_rows import joined, own_rows, team_major
from agilerl.observations import map_tree


class _GroupNets:
    """One agent group's networks and optimisers of P teams, stacked."""

    def __init__(self, teams: Sequence[Any], group: str) -> None:
        template = teams[0]
        self.teams = list(teams)
        self.group = group
        self.online = {
            role: StackedNetwork([team.net(role, group) for team in teams])
            for role in template.roles
        }
        self.targets = {
            target: StackedNetwork([team.net(target, group) for team in teams], False)
            for target in template.target_roles
        }
        #: Optimiser role -> the stacked Adam of the networks it trains, each team's lr.
        self.adams = {
            role: StackedAdam(
                [p for name in roles for p in self.online[name].parameters()],
                [self._own_parameters(team, roles) for team in teams],
                [getattr(team, team.net_name(role, group)) for team in teams],
                [getattr(team, lr) for team in teams],
            )
            for role, (roles, lr) in template.optimizer_roles.items()
        }

    def _own_parameters(self, team: Any, roles: Sequence[str]) -> list[torch.nn.Parameter]:
        """``team``'s own parameters of the networks ``roles``, in the stacked order."""
        return [
            p
            for name in roles
            for p in self.online[name].agent_parameters(team.net(name, self.group))
        ]

    def polyak(self) -> tuple[list[torch.nn.Parameter], list[torch.nn.Parameter]]:
        """Every target's stacked parameters and its online network's, position by
        position."""
        targets, online = [], []
        for target, source in self.teams[0].target_roles.items():
            targets += self.targets[target].all_parameters()
            online += self.online[source].all_parameters()
        return targets, online

    def bound(self, stack: ExitStack) -> None:
        for stacked in [*self.online.values(), *self.targets.values()]:
            stack.enter_context(stacked.bound())

    def write_back(self) -> None:
        for role, stacked in [*self.online.items(), *self.targets.items()]:
            stacked.write_back([team.net(role, self.group) for team in self.teams])
        for role, adam in self.adams.items():
            adam.write_back([getattr(team, team.net_name(role, self.group)) for team in self.teams])


class TeamActorCriticCohort:
    """MADDPG or MATD3 teams (same architecture) as one; see the module docstring."""

    #: Nothing beyond the architecture: batch sizes are padded, and the clip and the
    #: smoothing are the algorithm's (class attributes, equal within a class).
    same: ClassVar[tuple[str, ...]] = ()

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.nets = {group: _GroupNets(self.agents, group) for group in self.template.groups}
        device = self.template.device
        self.gamma = torch.tensor([a.gamma for a in self.agents], device=device)
        self.tau = torch.tensor([a.tau for a in self.agents], device=device, dtype=torch.float64)
        self.sizes = [int(a.batch_size) for a in self.agents]
        self.polyak_targets: list[torch.nn.Parameter] = []
        self.polyak_online: list[torch.nn.Parameter] = []
        for nets in self.nets.values():
            targets, online = nets.polyak()
            self.polyak_targets += targets
            self.polyak_online += online

    @contextmanager
    def _networks(self, rows: int, **attributes: Any) -> Iterator[None]:
        """The template team's code running on the stacked networks of every group, for
        a batch of ``rows`` rows per team and agent: each call of its actors and
        critics reordered team by team (module docstring); ``attributes`` bound too."""
        template = self.template
        count = len(self.agents)
        actor_out, q = template._actor_out, template._q  # its own, before binding

        def orders(x: Any) -> tuple[torch.Tensor, torch.Tensor]:
            return team_major(leading(x) // (count * rows), count, rows)

        def reordered(x: Any, order: torch.Tensor) -> Any:
            return map_tree(lambda t: t[order.to(t.device)], x)

        def stacked_actor_out(group: str, x: Any, target: bool = False) -> torch.Tensor:
            order, back = orders(x)
            return actor_out(group, reordered(x, order), target)[back.to(template.device)]

        def stacked_q(name: str, group: str, x: Any, action: torch.Tensor) -> torch.Tensor:
            order, back = orders(x)
            values = q(name, group, reordered(x, order), reordered(action, order))
            return values[back.to(values.device)]

        with ExitStack() as stack:
            for nets in self.nets.values():
                nets.bound(stack)
            stack.enter_context(
                bound(template, _actor_out=stacked_actor_out, _q=stacked_q, **attributes)
            )
            yield

    def _own_draws(
        self,
        draws: Sequence[Callable[[int], np.ndarray]],
        sizes: Sequence[int],
        rows: int,
        total: int,
    ) -> np.ndarray:
        """The cohort's ``total`` noise rows (``[members * teams * rows]``) from each
        team's own: ``draws[p](members * sizes[p])`` for its first ``sizes[p]`` rows per
        member (a team of size 0 draws nothing: zeros, as for padding rows)."""
        members = total // (len(self.agents) * rows)
        parts = [
            draw(members * size) if size else None for draw, size in zip(draws, sizes, strict=True)
        ]
        return joined(parts, members, rows)

    # -- acting -------------------------------------------------------------------------
    def explore(self, obs: Any, infos: Any = None) -> dict[str, np.ndarray]:
        """Every team's exploring actions for the cohort's observations (team ``p``'s
        rows the ``p``-th block of every agent's), one forward per group: Box actions
        plus each team's own noise, categorical ones sampled."""
        count = len(self.agents)
        rows = leading(obs) // count
        # Each team's own method, taken before the template's is bound to ``noise``.
        own = [agent._exploration_noise for agent in self.agents]

        def noise(group: str, total: int) -> np.ndarray:
            draws = [lambda n, draw=draw: draw(group, n) for draw in own]
            return self._own_draws(draws, [rows] * count, rows, total)

        with self._networks(rows, _exploration_noise=noise):
            return self.template.explore(obs, infos)

    # -- learning -----------------------------------------------------------------------
    def learn(
        self, batch: dict[str, Any], mask: np.ndarray, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float] | None]:
        """One learning call of the teams where ``mask`` holds, each on its block of
        ``batch`` (its first ``batch_size`` rows of the ``p``-th block of every agent's):
        every such team's critics step, and its actors and targets where its
        ``policy_freq`` says so. Returns what each team's own ``learn`` reports (None for
        a team that did not learn); ``generators`` are unused (a team's draws here come
        from its own generator)."""
        template = self.template
        count = len(self.agents)
        rows = leading(batch["obs"]) // count
        live = np.asarray(mask, dtype=bool)
        if not live.any():
            return [None] * count
        device = self.gamma.device
        # Each team's own method, taken before the template's is bound to ``smoothing``.
        own = [agent._smoothing for agent in self.agents]
        sizes = [size if on else 0 for size, on in zip(self.sizes, live, strict=True)]

        def smoothing(shape: tuple[int, ...]) -> np.ndarray:
            draws = [lambda n, draw=draw: draw((n, *shape[1:])) for draw in own]
            return self._own_draws(draws, sizes, rows, shape[0])

        def at(members: int, p: int) -> torch.Tensor:
            """Team ``p``'s own rows of a group's batch."""
            return own_rows(members, count, rows, p, self.sizes[p]).to(device)

        figures: dict[int, dict[str, list[torch.Tensor]]] = {
            p: {"critic_loss": [], "q_mean": [], "actor_loss": []}
            for p in np.flatnonzero(live).tolist()
        }
        gamma = self.gamma.repeat_interleave(rows)
        with self._networks(rows, gamma=gamma, _smoothing=smoothing):
            inputs = template.learning_inputs(batch)
            for group, members in template.groups.items():
                qs, target, active = template.critic_values(group, members, inputs)
                losses = []
                for p, own_figures in figures.items():
                    i = at(len(members), p)
                    loss = self.agents[p].critic_loss([q[i] for q in qs], target[i], active[i])
                    own_figures["critic_loss"].append(loss.detach())
                    own_figures["q_mean"].append(masked_mean(qs[0][i].detach(), active[i]))
                    losses.append(loss)
                self.nets[group].adams["critic_optimizer"].minimise(
                    torch.stack(losses).sum(), torch.as_tensor(live, device=device),
                    template.max_grad_norm,
                )  # fmt: skip
            for p in figures:
                self.agents[p].learn_counter += 1
            due = live & np.array([a.learn_counter % a.policy_freq == 0 for a in self.agents])
            if due.any():
                due_mask = torch.as_tensor(due, device=device)
                for group, members in template.groups.items():
                    q, active = template.policy_values(group, members, inputs)
                    losses = []
                    for p in np.flatnonzero(due).tolist():
                        i = at(len(members), p)
                        loss = self.agents[p].actor_loss(q[i], active[i])
                        figures[p]["actor_loss"].append(loss.detach())
                        losses.append(loss)
                    self.nets[group].adams["actor_optimizer"].minimise(
                        torch.stack(losses).sum(), due_mask, template.max_grad_norm
                    )
                polyak_update(self.polyak_targets, self.polyak_online, self.tau, due_mask)
        return reported(
            {
                p: {name: torch.stack(values).mean() for name, values in named.items() if values}
                for p, named in figures.items()
            },
            count,
        )

    def write_back(self) -> None:
        """Every team's weights, target weights and optimiser states back into it."""
        for nets in self.nets.values():
            nets.write_back()
