"""IPPO teams as one cohort: every team's rollout collected in lockstep with one forward
per agent group and step, and every team's PPO epochs of a group learnt with one loss
and one optimiser step each.

A team (:class:`~agilerl.algorithms.ippo.IPPO`) holds an actor, a critic and an Adam
optimiser per agent group. The cohort stacks them group by group across its P teams
(:class:`_GroupStack`): the stacked networks of a group run the template team's own
code (:meth:`~agilerl.algorithms.ippo.IPPO.group_act`, ``group_values``,
``group_forward``) on the rows of every team, team ``p``'s the ``p``-th block.

Collection (the family's turn,
:func:`~agilerl.families.multi_agent.loops.team_lockstep_turn`) runs
:func:`~agilerl.components.on_policy.collect_rollout` with the team's own
:class:`~agilerl.families.multi_agent.buffers.TeamRolloutCollector`, the cohort standing
in for the team (:meth:`TeamPolicyCohort.explore`, ``values``, ``last_step``,
``gamma``), on one vector env of the teams' copies (team ``p``'s the
``p``-th block of ``num_envs``), into one rollout of every copy. Time-limit cuts are
bootstrapped with each row's team's ``gamma``. Actions are sampled from torch's global
generator, which the generation loop seeds per cohort.

Learning: each team computes its own samples of each group from its block of the
rollout (its GAE with its own ``gamma`` and ``gae_lambda``:
:meth:`~agilerl.algorithms.ippo.IPPO.group_samples`), and the teams' samples of a group
learn together through :func:`~agilerl.cohorts.ppo_epochs.ppo_epochs` (each team's
minibatch orders from its own generator, its own ``clip_coef``, ``ent_coef``,
``vf_coef``, ``max_grad_norm``, ``target_kl`` and ``update_epochs``). Minibatches of
the teams line up only when every team has as many samples of the group; where agents
left their episodes at different steps in different teams the numbers differ, and that
group's teams then learn one after another on their own networks (written back, then
stacked again), each with minibatch orders from its own generator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, cast

import numpy as np
import torch

from agilerl.algorithms.ippo import GroupSamples, team_metrics
from agilerl.algorithms.multi_agent_actor_critic import leading
from agilerl.algorithms.optim import StackedAdam
from agilerl.cohorts.ppo_epochs import OwnSettings, cohort_ppo_loss, ppo_epochs
from agilerl.cohorts.stacking import StackedNetwork
from agilerl.cohorts.team_rows import team_major
from agilerl.observations import map_tree


class _GroupStack:
    """One agent group's actor, critic and optimiser of P teams, stacked."""

    def __init__(self, teams: Sequence[Any], group: str) -> None:
        self.teams = list(teams)
        self.group = group
        self.actor = StackedNetwork([team.net("actor", group) for team in teams])
        self.critic = StackedNetwork([team.net("critic", group) for team in teams])
        #: The teams' attribute holding the group's optimiser.
        self.optimizer = teams[0].net_name("optimizer", group)
        self.adam = StackedAdam(
            self.actor.parameters() + self.critic.parameters(),
            [
                self.actor.agent_parameters(team.net("actor", group))
                + self.critic.agent_parameters(team.net("critic", group))
                for team in teams
            ],
            [getattr(team, self.optimizer) for team in teams],
            [team.lr for team in teams],
        )

    @contextmanager
    def bound(self) -> Iterator[None]:
        """The template team's networks of the group running on the stacked parts."""
        with self.actor.bound(), self.critic.bound():
            yield

    def write_back(self) -> None:
        self.actor.write_back([team.net("actor", self.group) for team in self.teams])
        self.critic.write_back([team.net("critic", self.group) for team in self.teams])
        self.adam.write_back([getattr(team, self.optimizer) for team in self.teams])


class TeamPolicyCohort:
    """IPPO teams (same architecture and loop shape) as one; see the module docstring."""

    #: Attributes that must be equal across the cohort: the rollout's length and the
    #: minibatches' size (a team with an ``action_batch_size`` trains alone:
    #: :data:`~agilerl.cohorts.learners.ALONE_IF`).
    same: ClassVar[tuple[str, ...]] = ("learn_step", "batch_size")

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.stacks = {group: _GroupStack(self.agents, group) for group in self.template.groups}
        #: Each team's own settings of its update.
        self.own = OwnSettings.of(self.agents, self.template.device)
        #: Every row's team's discount (:meth:`use_copies`): what a rollout collector
        #: bootstraps time-limit cuts with.
        self.gamma: np.ndarray = np.zeros(0, dtype=np.float32)
        #: The step :meth:`explore` acted last, as a team's ``last_step``.
        self.last_step: dict[str, dict[str, Any]] = {"log_prob": {}, "value": {}}

    # -- acting: the team's hooks the collector calls ----------------------------------------
    def _by_group(
        self, obs: Any, infos: Any, run: Callable[[str, Any, Any], tuple[Any, ...]]
    ) -> list[dict[str, Any]]:
        """``run(group, x, mask)`` on every group's rows of every team at once, its
        outputs split back per agent id (``[P * N, ...]`` each, team ``p``'s rows the
        ``p``-th block, as ``obs`` holds them).

        A team's own code batches a group member by member (``[members * N]``); here
        the rows are reordered team by team, member by member within a team, so each
        team's rows are one block of the stacked networks, and put back after."""
        count = len(self.agents)
        template = self.template
        outputs: list[dict[str, Any]] = []
        for group, stack in self.stacks.items():
            members = template.present(obs, group)
            if not members:
                continue
            x = template.group_obs(obs, members)
            mask = template.group_mask(obs, infos, members)
            rows = leading(x) // (len(members) * count)  # each team's copies
            order, back = team_major(len(members), count, rows)
            with stack.bound():
                found = run(
                    group,
                    map_tree(lambda t, o=order: t[o.to(t.device)], x),
                    None if mask is None else mask[order.to(mask.device)],
                )
            for i, part in enumerate(found):
                if len(outputs) <= i:
                    outputs.append({})
                joined = part[back.numpy()] if isinstance(part, np.ndarray) else part[back]
                each = len(joined) // len(members)
                for m, agent in enumerate(members):
                    outputs[i][agent] = joined[m * each : (m + 1) * each]
        return outputs

    def explore(self, obs: Any, infos: Any = None) -> dict[str, Any]:
        """Every team's sampled actions (one forward per group); the log-probabilities
        and values in :attr:`last_step`."""
        actions, log_probs, values = self._by_group(
            obs,
            infos,
            lambda group, x, mask: self.template.group_act(group, x, mask, False, True),
        )
        self.last_step = {"log_prob": log_probs, "value": values}
        return actions

    def values(self, obs: Any) -> dict[str, np.ndarray]:
        """``V`` of every team's observations (its own critics), per agent id."""

        def run(group: str, x: Any, mask: Any) -> tuple[np.ndarray]:
            with torch.no_grad():
                return (self.template.group_values(group, x).cpu().numpy(),)

        return self._by_group(obs, None, run)[0]

    def use_copies(self, per_team: int) -> None:
        """Collection on ``per_team`` copies per team (a vector env of every team's
        copies, team ``p``'s the ``p``-th block): each row's time-limit cuts are
        bootstrapped with its team's ``gamma`` (:attr:`gamma`, what a rollout collector
        reads of the team it collects for)."""
        self.gamma = np.repeat(
            np.array([agent.gamma for agent in self.agents], dtype=np.float32), per_team
        )

    # -- learning ----------------------------------------------------------------------------
    def learn(
        self, rollout: Any, last_obs: Any, generators: Sequence[torch.Generator]
    ) -> list[dict[str, float]]:
        """Every team's IPPO update on its block of ``rollout`` (module docstring),
        bootstrapped from ``last_obs``; each team's metrics as its own
        :meth:`~agilerl.algorithms.ippo.IPPO.learn` reports them."""
        count = len(self.agents)
        per_team = rollout.num_envs // count
        last = self.values(last_obs)
        updated: list[list[tuple[torch.Tensor, int, bool]]] = [[] for _ in self.agents]
        for group in self.template.groups:
            samples = [
                team.group_samples(
                    group,
                    TeamBlock(rollout, p, per_team),
                    {a: v[p * per_team : (p + 1) * per_team] for a, v in last.items()},
                    None,
                )
                for p, team in enumerate(self.agents)
            ]
            learn = self._learn_together if lined_up(samples) else self._learn_in_turn
            for p, result in enumerate(learn(group, samples, generators)):
                if result is not None:
                    updated[p].append(result)
        return [team_metrics(own) for own in updated]

    def _learn_together(
        self,
        group: str,
        samples: list[GroupSamples | None],
        generators: Sequence[torch.Generator],
    ) -> list[tuple[torch.Tensor, int, bool] | None]:
        """The teams' PPO epochs of ``group`` as one (:func:`lined_up` samples)."""
        parts = cast(list[GroupSamples], samples)
        count, size = len(parts), parts[0].actions.shape[0]
        every = GroupSamples.joined(parts)
        stack = self.stacks[group]
        template = self.template

        def minibatch(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            batch = every.rows(index)
            with stack.bound():
                dist, value = template.group_forward(group, batch.obs, batch.masks)
            return cohort_ppo_loss(
                dist.log_prob(batch.actions), dist.entropy(), value, batch, count, self.own
            )

        where = torch.arange(size).unsqueeze(0) + (torch.arange(count) * size).unsqueeze(1)
        figures = ppo_epochs(
            where,
            template.batch_size,
            self.own,
            generators,
            minibatch,
            stack.adam,
        )
        means = figures.means()
        return [
            (means[:, p], int(figures.updates[p]), bool(figures.stopped[p])) for p in range(count)
        ]

    def _learn_in_turn(
        self,
        group: str,
        samples: list[GroupSamples | None],
        generators: Sequence[torch.Generator],
    ) -> list[tuple[torch.Tensor, int, bool] | None]:
        """The teams' PPO epochs of ``group`` one after another, each on its own
        networks and optimiser, which are then stacked again."""
        self.stacks[group].write_back()
        results: list[tuple[torch.Tensor, int, bool] | None] = []
        for team, own, generator in zip(self.agents, samples, generators, strict=True):
            if own is None:  # no member of this team's group acted
                results.append(None)
                continue
            # Its minibatch orders from its own generator; the cohort's stream of torch's
            # global one (its actions) is left where it was.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
                totals, evaluated, steps, early = team.update_group(group, own)
            results.append((totals / max(evaluated, 1), steps, early))
        self.stacks[group] = _GroupStack(self.agents, group)
        return results

    def write_back(self) -> None:
        """Every team's weights and optimiser states back into it."""
        for stack in self.stacks.values():
            stack.write_back()


def lined_up(samples: Sequence[GroupSamples | None]) -> bool:
    """Whether the teams' samples of a group can learn as one: every team has samples,
    as many as the others, and masks where the others have them."""
    if any(s is None for s in samples):
        return False
    present = [s for s in samples if s is not None]
    sizes = {int(s.actions.shape[0]) for s in present}
    return len(sizes) == 1 and len({s.masks is None for s in present}) == 1


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
