"""Independent PPO (de Witt et al., 2020): PPO per agent group, parameter sharing within one.

Each group has a :class:`StochasticActor` and a :class:`ValueNetwork` over its own
observations (no centralised information: the agents learn independently), trained by one
Adam optimiser per group with PPO's clipped loss (:func:`~agilerl.algorithms.ppo.
clipped_ppo_loss`, the single-agent PPO's conventions: advantages normalised per
minibatch, clipped value loss, ``max_grad_norm``, ``target_kl`` early stop). The agents
of a group pool their samples: one PPO update of the group's networks learns from all of
them.

Acting (:meth:`IPPO.explore`): actions sampled per agent, within masks, in the agent's own
action space (a Box action clipped into its bounds); the log-probability recorded is that
of the action the environment got, and learning evaluates that same action, so the ratio
is exact whatever the clipping. :attr:`IPPO.last_step` holds, per agent, the
``log_prob`` and ``value`` of the step just acted (what the rollout stores).

Advantages: GAE per agent and sub-environment over the rollout
(:func:`agilerl.components.on_policy.advantages_and_returns`, the single-agent rollout
buffer's, with the rollout's ``active`` mask; ``done[t]``: the agent's episode ended at
step ``t``). Steps where an agent was inactive are skipped: they add no advantage, take no
part in a loss, and the recursion passes over them (an agent absent for a while continues
from where it left off). Rollouts are collected by
:func:`agilerl.components.on_policy.collect_rollout` (the multi-agent loop's
:class:`~agilerl.families.multi_agent.buffers.TeamRolloutCollector`), which adds a
truncated episode's bootstrap (``gamma * V(final obs)``, with :meth:`IPPO.values`) to its
last reward.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import torch
from gymnasium import spaces

from agilerl.algorithms.core.multi_agent import PerAgent
from agilerl.algorithms.core.population import Population
from agilerl.algorithms.multi_agent_actor_critic import (
    MultiAgentActorCritic,
    concat_tree,
    leading,
    rows_of,
)
from agilerl.algorithms.optim import gradient_step
from agilerl.algorithms.ppo import (
    LEARN_METRICS,
    METRICS,
    clipped_ppo_loss,
    joined_minibatches,
    joined_ppo_loss,
    learning_epochs,
    stepping_total,
)
from agilerl.components import on_policy
from agilerl.components.observations import map_tree
from agilerl.models.networks import StochasticActorSpec, ValueNetworkSpec
from agilerl.networks.base import Observation
from agilerl.networks.networks import StochasticActor, ValueNetwork

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.ippo_schema import IPPOSpec
else:
    from agilerl.models.algorithms.ippo import IPPOSpec


@dataclass
class GroupSamples:
    """A group's learning samples (active rows of every member, pooled), as
    :func:`clipped_ppo_loss` reads them."""

    obs: Observation
    actions: torch.Tensor
    log_probs: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor
    masks: torch.Tensor | None

    def rows(self, index: torch.Tensor) -> GroupSamples:
        return GroupSamples(
            map_tree(lambda x: x[index], self.obs),
            self.actions[index],
            self.log_probs[index],
            self.values[index],
            self.advantages[index],
            self.returns[index],
            None if self.masks is None else self.masks[index],
        )

    @staticmethod
    def joined(parts: list[GroupSamples]) -> GroupSamples:
        """Several teams' samples of a group as one, in order (team ``p``'s the ``p``-th
        block); either every part has masks or none has."""
        first = parts[0].masks
        return GroupSamples(
            concat_tree([part.obs for part in parts]),
            torch.cat([part.actions for part in parts]),
            torch.cat([part.log_probs for part in parts]),
            torch.cat([part.values for part in parts]),
            torch.cat([part.advantages for part in parts]),
            torch.cat([part.returns for part in parts]),
            None if first is None else torch.cat([cast(torch.Tensor, p.masks) for p in parts]),
        )


def skip_inactive_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    active: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float,
    gae_lambda: float,
) -> torch.Tensor:
    """GAE advantages ``[T, N]`` of one agent with its ``active`` mask: the shared
    :func:`agilerl.components.on_policy.gae`, under the name and argument order this
    module has always offered."""
    return on_policy.gae(rewards, values, dones, last_value, gamma, gae_lambda, active)


class IPPO(MultiAgentActorCritic, spec=IPPOSpec):
    """IPPO (module docstring). ``learn_step`` environment steps (the loop rounds them to
    whole vector steps) make one rollout; :meth:`learn` runs ``update_epochs`` passes
    over it per group in minibatches of ``batch_size`` samples. ``action_batch_size``
    bounds the observations one forward pass acts on (null: a group's all at once)."""

    #: Saved with the hyperparameters: a checkpoint rebuilds the networks it describes.
    extra_init_args: ClassVar[tuple[str, ...]] = ("net_config",)
    default_mutable: ClassVar[tuple[str, ...]] = ("lr", "batch_size", "learn_step")
    roles: ClassVar[tuple[str, ...]] = ("actor", "critic")
    optimizer_roles: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "optimizer": (("actor", "critic"), "lr")
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        **{k: f"{v} (mean over groups)" for k, v in LEARN_METRICS.items() if k in METRICS},
        "updates": "optimiser steps taken, all groups together",
        "early_stop": "share of the groups whose epochs target_kl ended early",
    }
    main_loss: ClassVar[str | None] = "value_loss"
    #: What teams of a cohort share: the rollout's length and the minibatches' size (a
    #: team with an ``action_batch_size`` trains alone:
    #: :data:`~agilerl.cohorts.learners.ALONE_IF`).
    cohort_same: ClassVar[tuple[str, ...]] = ("learn_step", "batch_size")
    #: Teams learn in cohorts.
    learns_in_cohorts: ClassVar[bool] = True

    # Set from the bound spec (``IPPOSpec``) before the body runs.
    batch_size: int
    lr: float
    learn_step: int
    gamma: float
    gae_lambda: float
    action_std_init: float
    clip_coef: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    target_kl: float | None
    update_epochs: int
    action_batch_size: int | None

    def __init__(
        self,
        observation_spaces: Mapping[str, spaces.Space],
        action_spaces: Mapping[str, spaces.Space],
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: ``IPPOSpec`` (``inspect.signature(IPPO)``)."""
        super().__init__(observation_spaces, action_spaces, index, **options)
        for group in self.groups:
            space = self.policy_spaces[group]
            action_space = self.group_space(group, "action")
            actor = self.build_network(
                StochasticActor, f"group {group!r}", space, action_space,
                self.group_network_spec(StochasticActorSpec, space),
            )  # fmt: skip
            if self.action_std_init > 0:
                actor.distribution.set_initial_std(self.action_std_init)
            critic = self.build_network(
                ValueNetwork, f"group {group!r}", space, None,
                self.group_network_spec(ValueNetworkSpec, space),
            )  # fmt: skip
            setattr(self, self.net_name("actor", group), actor)
            setattr(self, self.net_name("critic", group), critic)
        #: The step :meth:`explore` acted last: ``{"log_prob": PerAgent, "value": PerAgent}``
        #: of ``[N]`` arrays, what the rollout stores beside the actions.
        self.last_step: dict[str, PerAgent] = {"log_prob": {}, "value": {}}
        self.finish_init()

    # -- acting ---------------------------------------------------------------------------
    def _chunks(self, rows: int) -> list[tuple[int, int]]:
        size = self.action_batch_size or rows
        return [(i, min(i + size, rows)) for i in range(0, rows, size)]

    def _act(
        self,
        view: Population[IPPO],
        obs: PerAgent,
        infos: PerAgent | None,
        deterministic: bool,
        record: bool,
    ) -> tuple[PerAgent, dict[str, PerAgent]]:
        """The actions of the teams of ``view`` for ``obs`` (team ``p``'s rows the
        ``p``-th block of every agent's), one forward per group (in chunks of
        ``action_batch_size``), and with ``record`` the log-probabilities and values."""
        actions: PerAgent = {}
        log_probs: PerAgent = {}
        values: PerAgent = {}
        for group in self.groups:
            members = self.present(obs, group)
            if not members:
                continue
            x = view.team_major(self.group_obs(obs, members), len(members))
            mask = self.group_mask(obs, infos, members)
            mask = None if mask is None else view.team_major(mask, len(members))
            rows = leading(x)
            parts = [
                self.group_act(
                    group,
                    rows_of(x, start, stop),
                    None if mask is None else mask[start:stop],
                    deterministic,
                    record,
                    view,
                )
                for start, stop in self._chunks(rows)
            ]
            joined = [
                view.member_major(np.concatenate(p), len(members)) for p in zip(*parts, strict=True)
            ]
            n = rows // len(members)
            for i, agent in enumerate(members):
                actions[agent] = joined[0][i * n : (i + 1) * n]
                if record:
                    log_probs[agent] = joined[1][i * n : (i + 1) * n]
                    values[agent] = joined[2][i * n : (i + 1) * n]
        return actions, {"log_prob": log_probs, "value": values}

    def _network(self, view: Population[IPPO] | None, role: str, group: str) -> Any:
        """``group``'s network ``role``: the view's, or this team's own (None)."""
        return self.net(role, group) if view is None else view.net(self.net_name(role, group))

    def group_act(
        self,
        group: str,
        x: Any,
        mask: torch.Tensor | None,
        deterministic: bool,
        record: bool,
        view: Population[IPPO] | None = None,
    ) -> tuple[np.ndarray, ...]:
        """Actions of ``group``'s policy (``view``'s networks, or this team's own) for
        the preprocessed rows ``x`` (within ``mask``): ``(env_action,)``, or with
        ``record`` ``(env_action, log_prob, value)``; every row's values, whichever
        member or team it is."""
        actor = self._network(view, "actor", group)
        with torch.no_grad():
            dist = actor.distribution(actor.head(actor.encoder(x)), mask)
            env_action = actor.distribution.env_actions(dist.sample(deterministic))
            if not record:
                return (env_action,)
            sample = actor.distribution.samples(torch.as_tensor(env_action))
            log_prob = dist.log_prob(sample.to(self.device)).cpu().numpy()
            value = self.group_values(group, x, view).cpu().numpy()
        return env_action, log_prob, value

    def group_values(
        self, group: str, x: Any, view: Population[IPPO] | None = None
    ) -> torch.Tensor:
        """``V`` ``[rows]`` of ``group``'s critic (``view``'s, or this team's own) for the
        preprocessed rows ``x``."""
        critic = self._network(view, "critic", group)
        return critic.head(critic.encoder(x)).reshape(-1)

    def group_forward(
        self, group: str, x: Any, mask: torch.Tensor | None, view: Population[IPPO] | None = None
    ) -> tuple[Any, torch.Tensor]:
        """The policy's distribution and the values of the rows ``x`` (with gradients;
        ``view``'s networks, or this team's own): what a PPO loss of ``group`` reads."""
        actor = self._network(view, "actor", group)
        dist = actor.distribution(actor.head(actor.encoder(x)), mask)
        return dist, self.group_values(group, x, view)

    def explore(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """Actions sampled from every agent's policy (within its mask); records their
        log-probabilities and values in :attr:`last_step`."""
        actions, self.last_step = self._act(Population.of(self), obs, infos, False, True)
        return actions

    def act(
        self, view: Population[IPPO], obs: PerAgent, infos: PerAgent | None = None
    ) -> tuple[PerAgent, dict[str, PerAgent]]:
        """Every team of ``view`` exploring on its block of ``obs``: the sampled actions,
        and the log-probabilities and values (what :attr:`last_step` holds for one)."""
        return self._act(view, obs, infos, False, True)

    def get_action(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """The most likely action of every agent (the Gaussian mean for a Box), in masks."""
        return self._act(Population.of(self), obs, infos, True, False)[0]

    def values(self, obs: PerAgent) -> PerAgent:
        """``V`` of every agent's observations, ``[N]`` each (bootstrapping)."""
        return self.population_values(Population.of(self), obs)

    def population_values(self, view: Population[IPPO], obs: PerAgent) -> PerAgent:
        """``V`` of every team's observations (its own critics; team ``p``'s rows the
        ``p``-th block of every agent's), per agent id."""
        out: PerAgent = {}
        with torch.no_grad():
            for group in self.groups:
                members = self.present(obs, group)
                if not members:
                    continue
                x = view.team_major(self.group_obs(obs, members), len(members))
                value = view.member_major(self.group_values(group, x, view), len(members))
                n = value.shape[0] // len(members)
                for i, agent in enumerate(members):
                    out[agent] = value[i * n : (i + 1) * n].cpu().numpy()
        return out

    # -- learning -------------------------------------------------------------------------
    def group_samples(
        self, group: str, rollout: Any, last_values: PerAgent, last_done: PerAgent | None
    ) -> GroupSamples | None:
        """The active samples of every member of ``group``, with their advantages."""
        parts = []
        given: PerAgent = {}
        actor = self.net("actor", group)
        # Masks given in infos only: a rollout that stores them has an action_mask field.
        stored_masks = getattr(rollout, "action_mask", None) or {}
        for agent in self.groups[group]:
            reward = _tensor(rollout.reward[agent], self.device).float()
            steps, envs = reward.shape[:2]
            value = _tensor(rollout.value[agent], self.device).float().reshape(steps, envs)
            done = _tensor(rollout.done[agent], self.device).float().reshape(steps, envs)
            if last_done is not None and agent in last_done:
                done[-1] = _tensor(last_done[agent], self.device).float().reshape(envs)
            active = _tensor(rollout.active[agent], self.device).bool().reshape(steps, envs)
            last = _tensor(last_values[agent], self.device).float().reshape(envs)
            adv, ret = on_policy.advantages_and_returns(
                reward.reshape(steps, envs), value, done, last, self.gamma, self.gae_lambda,
                active=active,
            )  # fmt: skip
            keep = active.reshape(-1)
            if not keep.any():
                continue
            flat_obs = map_tree(lambda x, k=keep: _flat_rows(x, k), rollout.obs[agent])
            action = _flat_rows(_tensor(rollout.action[agent], self.device), keep)
            if stored_masks.get(agent) is not None:
                given[agent] = {"action_mask": _flat_rows(stored_masks[agent], keep)}
            parts.append(
                (
                    {agent: flat_obs},
                    actor.distribution.samples(action).to(self.device),
                    _tensor(rollout.log_prob[agent], self.device).float().reshape(-1)[keep],
                    value.reshape(-1)[keep],
                    adv.reshape(-1)[keep],
                    ret.reshape(-1)[keep],
                )
            )
        if not parts:
            return None
        members = [next(iter(p[0])) for p in parts]
        stored = {m: p[0][m] for m, p in zip(members, parts, strict=True)}
        obs = self.group_obs(stored, members)
        # The masks the actions were chosen within (a Dict observation's action_mask, or
        # the rollout's), so the log-probabilities learnt from are those it recorded.
        masks = self.group_mask(stored, given, members)

        def joined(i: int) -> torch.Tensor:
            return torch.cat([p[i] for p in parts])

        # actions, log_probs, values, advantages, returns
        return GroupSamples(obs, joined(1), joined(2), joined(3), joined(4), joined(5), masks)

    def update_group(
        self, group: str, samples: GroupSamples
    ) -> tuple[torch.Tensor, int, int, bool]:
        """PPO epochs on one group's samples (this team's own networks and optimiser,
        minibatch orders from torch's generator): summed :data:`METRICS`, minibatches
        evaluated, optimiser steps, whether target_kl stopped them."""
        optimizer = getattr(self, self.net_name("optimizer", group))
        kl_index = METRICS.index("approx_kl")
        totals = torch.zeros(len(METRICS), device=self.device)
        evaluated = updates = 0
        count = samples.actions.shape[0]
        for _ in range(self.update_epochs):
            order = torch.randperm(count).to(self.device)
            for start in range(0, count, self.batch_size):
                batch = samples.rows(order[start : start + self.batch_size])
                dist, value = self.group_forward(group, batch.obs, batch.masks)
                loss, stats = clipped_ppo_loss(
                    dist.log_prob(batch.actions), dist.entropy(), value, batch,
                    self.clip_coef, self.ent_coef, self.vf_coef,
                )  # fmt: skip
                totals += stats
                evaluated += 1
                if self.target_kl is not None and stats[kl_index].item() > self.target_kl:
                    return totals, evaluated, updates, True
                gradient_step(optimizer, loss, self.max_grad_norm)
                updates += 1
        return totals, evaluated, updates, False

    def learn(
        self, rollout: Any, last_obs: PerAgent, last_done: PerAgent | None = None
    ) -> dict[str, float]:
        """PPO updates of every group on a whole rollout (a :class:`~agilerl.families.multi_agent.
        buffers.MultiAgentRollout`: per agent ``[T, N, ...]`` obs, action, log_prob,
        value, reward, done, active). ``last_obs``: the observations after the last step
        (their values bootstrap the advantages); ``last_done``: optional per-agent done
        flags of the last step, overriding the stored ones (as the single-agent rollout
        buffer's). Returns :attr:`learn_metrics`: the means over the groups of PPO's
        figures, the optimiser steps of all groups and the share stopped by target_kl."""
        return self.update(Population.of(self), rollout, last_obs, last_done)[0]

    def update(
        self,
        view: Population[IPPO],
        rollout: Any,
        last_obs: PerAgent,
        last_done: PerAgent | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float]]:
        """Every team's IPPO update of ``view`` on its block of ``rollout`` (team ``p``'s
        the ``p``-th block of its copies; :meth:`learn` for one), bootstrapped from
        ``last_obs``; each team's :attr:`learn_metrics`. Each team computes its own
        samples of each group (its GAE with its own ``gamma`` and ``gae_lambda``); the
        teams' epochs of a group run together when their samples line up
        (:meth:`_epochs_together`), else each team's on its own (:meth:`_epochs_each`).
        ``generators``: each team's own minibatch orders (None, or torch's own generator:
        torch's stream, one team)."""
        last = self.population_values(view, last_obs)
        updated: list[list[tuple[torch.Tensor, int, bool]]] = [[] for _ in view.agents]
        for group in self.groups:
            samples = [
                team.group_samples(
                    group,
                    view.team_rollout(rollout, p),
                    view.team_copies(last, p),
                    None if last_done is None else view.team_copies(last_done, p),
                )
                for p, team in enumerate(view.agents)
            ]
            together = view.stacked and lined_up(samples)
            epochs = self._epochs_together if together else self._epochs_each
            for p, result in enumerate(epochs(view, group, samples, generators)):
                if result is not None:
                    updated[p].append(result)
        return [team_metrics(own) for own in updated]

    def _epochs_together(
        self,
        view: Population[IPPO],
        group: str,
        samples: list[GroupSamples | None],
        generators: Sequence[torch.Generator] | None,
    ) -> list[tuple[torch.Tensor, int, bool] | None]:
        """The teams' PPO epochs of ``group`` as one (:func:`lined_up` samples): each
        team's minibatch orders from its own generator, its own coefficients, clip,
        ``target_kl`` and ``update_epochs`` (PPO's :func:`~agilerl.algorithms.ppo.
        learning_epochs` on the view's stacked optimiser of the group)."""
        assert generators is not None  # a stacked view's teams draw their own orders
        parts = cast(list[GroupSamples], samples)
        count, size = len(parts), parts[0].actions.shape[0]
        every = GroupSamples.joined(parts)
        coefficients = [
            cast(torch.Tensor, view.value(name)).unsqueeze(1)
            for name in ("clip_coef", "ent_coef", "vf_coef")
        ]
        max_grad_norm = view.value("max_grad_norm")

        def minibatch(index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            batch = every.rows(index.to(self.device))
            dist, value = self.group_forward(group, batch.obs, batch.masks, view)
            return joined_ppo_loss(
                dist.log_prob(batch.actions), dist.entropy(), value, batch, count, *coefficients
            )

        optimizer = self.net_name("optimizer", group)

        def minimise(losses: torch.Tensor, step: np.ndarray) -> None:
            live = None if step.all() else torch.as_tensor(step, device=self.device)
            view.minimise(optimizer, stepping_total(losses, live), live, max_grad_norm)

        where = torch.arange(size).unsqueeze(0) + (torch.arange(count) * size).unsqueeze(1)
        figures = learning_epochs(
            [int(agent.update_epochs) for agent in view.agents],
            [agent.target_kl for agent in view.agents],
            lambda active: joined_minibatches(where, self.batch_size, generators, active),
            minibatch,
            minimise,
        )
        means = figures.means()
        return [
            (means[:, p], int(figures.updates[p]), bool(figures.stopped[p])) for p in range(count)
        ]

    def _epochs_each(
        self,
        view: Population[IPPO],
        group: str,
        samples: list[GroupSamples | None],
        generators: Sequence[torch.Generator] | None,
    ) -> list[tuple[torch.Tensor, int, bool] | None]:
        """Each team's PPO epochs of ``group`` on its own networks and optimiser
        (:meth:`update_group`), one after another; stacked teams' orders seeded from
        their own generators, torch's stream (their actions) left where it was."""
        results: list[tuple[torch.Tensor, int, bool] | None] = []
        with view.own_networks():
            for p, (team, own) in enumerate(zip(view.agents, samples, strict=True)):
                if own is None:  # no member of this team's group acted
                    results.append(None)
                    continue
                generator = None if generators is None else generators[p]
                totals, evaluated, steps, early = _own_epochs(team, group, own, generator)
                results.append((totals / max(evaluated, 1), steps, early))
        return results


def _own_epochs(
    team: IPPO, group: str, samples: GroupSamples, generator: torch.Generator | None
) -> tuple[torch.Tensor, int, int, bool]:
    """``team``'s :meth:`IPPO.update_group`, its minibatch orders from torch's generator,
    seeded from ``generator`` when given (its stream left where it was); given torch's
    own generator (a turn of one team), from its stream, as :meth:`IPPO.learn` draws."""
    if generator is None or generator is torch.default_generator:
        return team.update_group(group, samples)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(2**31, (1,), generator=generator)))
        return team.update_group(group, samples)


def lined_up(samples: Sequence[GroupSamples | None]) -> bool:
    """Whether the teams' samples of a group can learn as one: every team has samples,
    as many as the others, and masks where the others have them."""
    if any(s is None for s in samples):
        return False
    present = [s for s in samples if s is not None]
    sizes = {int(s.actions.shape[0]) for s in present}
    return len(sizes) == 1 and len({s.masks is None for s in present}) == 1


def team_metrics(updated: list[tuple[torch.Tensor, int, bool]]) -> dict[str, float]:
    """A team's :attr:`IPPO.learn_metrics` from its groups' updates, each ``(mean of
    every figure of METRICS, optimiser steps, stopped by target_kl)``: the figures'
    means over the groups, the steps of all groups, the share stopped early; empty when
    no group learnt."""
    if not updated:
        return {}
    figures = torch.stack([means for means, _, _ in updated]).mean(dim=0).tolist()
    metrics = dict(zip(METRICS, figures, strict=True))
    metrics["updates"] = float(sum(steps for _, steps, _ in updated))
    metrics["early_stop"] = sum(int(early) for _, _, early in updated) / len(updated)
    return metrics


def _flat_rows(x: Any, keep: torch.Tensor) -> Any:
    """Rows ``keep`` (a flat ``[T * N]`` bool) of a ``[T, N, ...]`` leaf."""
    x = x if torch.is_tensor(x) else torch.as_tensor(np.asarray(x))
    return x.reshape(-1, *x.shape[2:])[keep.to(x.device)]


def _tensor(value: Any, device: torch.device) -> torch.Tensor:
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    return tensor.to(device)
