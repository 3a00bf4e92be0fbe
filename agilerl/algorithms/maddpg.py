"""Multi-agent DDPG (Lowe et al., 2017): deterministic actors, centralised critics.

Per agent group: an actor over the group's own observations and a critic ``Q(x, a)``
over *every* agent's observation and action, each with a Polyak-averaged target and its
own Adam optimiser (``lr_actor``, ``lr_critic``). The agents of a group share both: the
critic input is agent-centric (the agent's own observation and action first, then the
others' in the environment's order), so one critic serves each member as that member.

Actions. A Box action is the actor's tanh output, *normalised* to [-1, 1] inside the
agent (as DDPG's) and scaled to the bounds for the environment. A Discrete or
MultiDiscrete action is read from the actor's logits (one block per sub-action): the
greedy action is the best allowed choice, exploration samples the masked categorical
(the Gumbel-softmax MADDPG of the paper), and learning differentiates a straight-through
Gumbel-softmax sample. The critic reads actions as normalised Box values or one-hot
choices.

Critic inputs. With vector observations everywhere the critic's encoder reads the
concatenated observations (the network section's encoder). When some agent observes an
image or a Dict, the critic's observation is a Dict of every agent's parts (keyed by
position: ``"0"`` the agent itself, ``"1.<key>"`` the next agent's Dict entry, ...) read
by the multi-input encoder. An agent inactive in a sample enters every critic input as
zeros (observation and action), and its own rows are left out of its losses.

One learning step (:meth:`MADDPG.learn`), per group and member ``i``::

    y_i = r_i + gamma * (1 - done_i) * Q_target(x'_i, a'),  a'_j = actor_target_j(o'_j)
    critic loss = mean over active rows of (Q(x_i, a) - y_i)^2
    actor loss  = -mean over active rows of Q(x_i, a with a_i <- actor_i(o_i))
    targets <- tau * online + (1 - tau) * targets         after the actor update

Exploration (:meth:`MADDPG.explore`): Box actions get Ornstein-Uhlenbeck (``O_U_noise``)
or Gaussian noise of scale ``expl_noise`` (normalised units), one noise state per
sub-environment and agent, restarted where an episode ended (:meth:`episodes_ended`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from torch.nn import functional

from agilerl.algorithms.core.multi_agent import PerAgent
from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.hyperparameters import positive_int
from agilerl.algorithms.multi_agent_actor_critic import (
    MultiAgentActorCritic,
    active_rows,
    leading,
    masked_mean,
)
from agilerl.algorithms.optim import polyak_update
from agilerl.components.action_noise import (
    ActionNoise,
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    smoothing_noise,
)
from agilerl.files import checkpoints
from agilerl.models.networks import (
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    StochasticActorSpec,
)
from agilerl.modules.base import respec
from agilerl.modules.multi_input import flat_dim, is_image_space
from agilerl.networks.distributions import MASKED_LOGIT
from agilerl.networks.networks import ContinuousQNetwork, DeterministicActor, StochasticActor

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.maddpg_schema import MADDPGSpec
else:
    from agilerl.models.algorithms.maddpg import MADDPGSpec


class ActionCodec:
    """How one agent's actions reach the critic (module docstring): ``dim`` features per
    action; Box actions normalised, categorical ones one-hot per sub-action."""

    def __init__(self, space: spaces.Space) -> None:
        if isinstance(space, spaces.Box):
            low = np.asarray(space.low, np.float32).reshape(-1)
            high = np.asarray(space.high, np.float32).reshape(-1)
            if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
                raise ValueError(f"a Box action space needs finite bounds, got {space}")
            self.mid, self.half = (high + low) / 2, (high - low) / 2
            self.box_shape: tuple[int, ...] = space.shape
            self.nvec: list[int] = []
            self.dim = int(low.size)
        elif isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
            discrete = isinstance(space, spaces.Discrete)
            self.nvec = [int(space.n)] if discrete else [int(n) for n in space.nvec.reshape(-1)]
            self.start = np.asarray(space.start, np.int64).reshape(-1)
            self.dim = sum(self.nvec)
        else:
            raise TypeError(
                f"MADDPG and MATD3 act in Box, Discrete or MultiDiscrete spaces, got {space!r}"
            )
        self.space = space  # narrowed by the checks above: its shape is known

    @property
    def continuous(self) -> bool:
        return not self.nvec

    def to_critic(self, action: Any, device: torch.device) -> torch.Tensor:
        """Environment actions ``[B, ...]`` -> critic features ``[B, dim]``."""
        action = torch.as_tensor(action, device=device)
        rows = action.shape[0]
        if self.continuous:
            mid = torch.as_tensor(self.mid, device=device)
            half = torch.as_tensor(self.half, device=device)
            return (action.reshape(rows, -1).float() - mid) / half
        index = action.reshape(rows, -1).long() - torch.as_tensor(self.start, device=device)
        hot = [functional.one_hot(index[:, i], n) for i, n in enumerate(self.nvec)]
        return torch.cat(hot, dim=1).float()

    def to_env(self, features: torch.Tensor) -> np.ndarray:
        """Critic features (normalised Box values or one-hot choices) -> env actions."""
        if self.continuous:
            values = features.detach().cpu().numpy().clip(-1.0, 1.0) * self.half + self.mid
            return values.astype(self.space.dtype).reshape(-1, *self.box_shape)
        blocks = features.split(self.nvec, dim=-1)
        index = torch.stack([b.argmax(dim=-1) for b in blocks], dim=-1).cpu().numpy()
        index = index + self.start
        if isinstance(self.space, spaces.Discrete):
            return index.reshape(-1).astype(np.int64)
        return index.reshape(-1, *self.space.shape).astype(self.space.dtype)

    def choose(self, logits: torch.Tensor, mask: torch.Tensor | None, mode: str) -> torch.Tensor:
        """One-hot choices ``[B, dim]`` from the actor's logits within ``mask``: the best
        (``"greedy"``), a sample (``"sample"``), or a straight-through Gumbel-softmax
        sample that carries the gradient (``"relaxed"``)."""
        if mask is not None:
            logits = logits.masked_fill(~mask.reshape(logits.shape), MASKED_LOGIT)
        out = []
        for block in logits.split(self.nvec, dim=-1):
            if mode == "relaxed":
                out.append(functional.gumbel_softmax(block, tau=1.0, hard=True))
                continue
            if mode == "sample":
                block = block - (-torch.rand_like(block).log()).log()  # Gumbel-max sample
            out.append(functional.one_hot(block.argmax(dim=-1), block.shape[-1]).to(block))
        return torch.cat(out, dim=-1)


@dataclass(frozen=True)
class LearningInputs:
    """What every group's update of one learning call reads: the batch, each agent's
    activity ``weight`` per row, its preprocessed observations (``features``, and
    ``next_features``), the batch's actions and the target actors' next actions as
    critic features, and the action masks of the batch's observations."""

    batch: Mapping[str, Any]
    weight: PerAgent
    features: PerAgent
    next_features: PerAgent
    actions: PerAgent
    next_actions: PerAgent
    masks: PerAgent


class MADDPG(MultiAgentActorCritic, spec=MADDPGSpec):
    """MADDPG (module docstring). ``learn_step`` and ``batch_size`` are read by the
    training loop (environment steps between updates, transitions per update).
    ``policy_freq``: critic updates per actor update (MADDPG's spec has none: every
    update; MATD3's carries it)."""

    #: ``policy_freq`` (critic updates per actor update): MADDPG's spec states no delay,
    #: so MADDPG takes it as a keyword of its own (every update by default); MATD3's spec
    #: states it. ``net_config``: a checkpoint rebuilds the networks it describes.
    extra_init_args: ClassVar[tuple[str, ...]] = ("policy_freq", "net_config")
    default_mutable: ClassVar[tuple[str, ...]] = (
        "lr_actor",
        "lr_critic",
        "batch_size",
        "learn_step",
    )
    #: The critics of a group (MATD3 has two), each with a target ``<name>_target``.
    critics: ClassVar[tuple[str, ...]] = ("critic",)
    roles: ClassVar[tuple[str, ...]] = ("actor", "critic")
    target_roles: ClassVar[Mapping[str, str]] = {
        "actor_target": "actor",
        "critic_target": "critic",
    }
    optimizer_roles: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "actor_optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic",), "lr_critic"),
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "critic_loss": "mean squared TD error of the active rows (summed over a group's "
        "critics, mean over groups)",
        "actor_loss": "-mean Q of the actors' actions (on the calls that update them)",
        "q_mean": "mean Q-value of the first critics for the actions taken",
    }
    main_loss: ClassVar[str | None] = "critic_loss"
    #: Target policy smoothing of Box actions (MATD3's; none for MADDPG): standard
    #: deviation and clip of the noise on target actions, in normalised units.
    policy_noise: ClassVar[float] = 0.0
    noise_clip: ClassVar[float] = 0.5
    #: Gradient-norm clip of every update (DDPG's).
    max_grad_norm: ClassVar[float | None] = 10.0
    #: What teams of a cohort share beyond the architecture: nothing (batch sizes are
    #: padded; the clip and the smoothing are class attributes, equal within a class).
    cohort_same: ClassVar[tuple[str, ...]] = ()
    #: Teams learn in cohorts (MATD3 inherits it).
    learns_in_cohorts: ClassVar[bool] = True

    # Set from the bound spec (``MADDPGSpec``) before the body runs.
    batch_size: int
    learn_step: int
    gamma: float
    vect_noise_dim: int
    lr_actor: float
    lr_critic: float
    tau: float
    O_U_noise: bool
    expl_noise: float
    mean_noise: float
    theta: float
    dt: float
    policy_freq: int

    def __init__(
        self,
        observation_spaces: Mapping[str, spaces.Space],
        action_spaces: Mapping[str, spaces.Space],
        index: int = 0,
        *,
        policy_freq: int | None = None,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: the bound spec's
        (``inspect.signature(MADDPG)``). ``policy_freq``: None is the spec's value, or
        every update where the spec states none (MADDPG's)."""
        spec = type(self).spec
        stated = spec is not None and "policy_freq" in spec.model_fields
        if stated and policy_freq is not None:
            options["policy_freq"] = policy_freq  # checked as the spec's field
        super().__init__(observation_spaces, action_spaces, index, **options)
        if not stated:
            self.policy_freq = (
                1 if policy_freq is None else positive_int("policy_freq", policy_freq)
            )
        #: Agent id -> how its actions reach the critics.
        self.codecs = {a: ActionCodec(self.action_spaces[a]) for a in self.agent_ids}
        #: Agent id -> the critic input order of that agent (itself first).
        self.critic_order = {a: [a, *(b for b in self.agent_ids if b != a)] for a in self.agent_ids}
        self._vector_critic = not any(
            is_image_space(s) or isinstance(s, (spaces.Dict, spaces.Tuple))
            for s in (self.policy_spaces[self.group_of[a]] for a in self.agent_ids)
        )
        self.noise: dict[str, ActionNoise] = {}
        for group in self.groups:
            self._build_group(group)
        #: Calls of :meth:`learn` so far: the actors and targets update every policy_freq.
        self.learn_counter = 0
        self.finish_init()

    # -- construction ---------------------------------------------------------------------
    def _build_group(self, group: str) -> None:
        space = self.policy_spaces[group]
        action_space = self.group_space(group, "action")
        codec = self.codecs[self.groups[group][0]]
        what = f"group {group!r}"
        if codec.continuous:
            spec = self.group_network_spec(DeterministicActorSpec, space)
            actor = self.build_network(DeterministicActor, what, space, action_space, spec)
            self.noise[group] = self._make_noise(codec.dim)
        else:
            spec = self.group_network_spec(StochasticActorSpec, space)
            actor = self.build_network(StochasticActor, what, space, action_space, spec)
        setattr(self, self.net_name("actor", group), actor)
        critic_space = self._critic_space(self.groups[group][0])
        actions = spaces.Box(-1.0, 1.0, (sum(c.dim for c in self.codecs.values()),), np.float32)
        critic_spec = self.group_network_spec(ContinuousQNetworkSpec, critic_space)
        # The section describes the actor: a value must not be squashed by its head.
        head = respec(critic_spec.head_config, output_activation=None)
        critic_spec = respec(critic_spec, head_config=head.model_dump())
        for i, name in enumerate(self.critics):
            spec = critic_spec
            if spec.random_seed is not None:  # twin critics must not start identical
                spec = respec(spec, random_seed=spec.random_seed + i)
            critic = self.build_network(
                ContinuousQNetwork, f"the critic of {what}", critic_space, actions, spec
            )
            setattr(self, self.net_name(name, group), critic)

    def _make_noise(self, action_dim: int) -> ActionNoise:
        if self.O_U_noise:
            return OrnsteinUhlenbeckNoise(
                action_dim, self.vect_noise_dim, self.mean_noise, self.expl_noise,
                self.theta, self.dt,
            )  # fmt: skip
        return GaussianNoise(action_dim, self.vect_noise_dim, self.mean_noise, self.expl_noise)

    def _critic_space(self, agent: str) -> spaces.Space:
        """What a critic of ``agent``'s group reads besides the actions (module docstring)."""
        order = [self.policy_spaces[self.group_of[b]] for b in self.critic_order[agent]]
        if self._vector_critic:
            return spaces.Box(-np.inf, np.inf, (sum(flat_dim(s) for s in order),), np.float32)
        parts: dict[str, spaces.Space] = {}
        for pos, space in enumerate(order):
            if isinstance(space, spaces.Dict):
                parts.update({f"{pos}.{k}": sub for k, sub in space.spaces.items()})
            elif isinstance(space, spaces.Tuple):
                parts.update({f"{pos}.{k}": sub for k, sub in enumerate(space.spaces)})
            else:
                parts[str(pos)] = space
        return spaces.Dict(parts)

    # -- critic inputs --------------------------------------------------------------------
    def _features(self, obs: PerAgent) -> PerAgent:
        """Every agent's observations, preprocessed for its policy (mask key dropped)."""
        return {a: self.group_obs(obs, [a]) for a in self.agent_ids}

    def _critic_obs(self, features: PerAgent, members: list[str], weight: PerAgent) -> Any:
        """The critic observation of every member (stacked member by member), with each
        agent's part multiplied by its activity ``weight`` (inactive: zeros)."""
        per_member = []
        for agent in members:
            order = self.critic_order[agent]
            if self._vector_critic:
                per_member.append(
                    torch.cat([features[b] * weight[b][:, None] for b in order], dim=1)
                )
                continue
            parts = {}
            for pos, b in enumerate(order):
                x, w = features[b], weight[b]
                if isinstance(x, dict):
                    parts.update({f"{pos}.{k}": _scaled(v, w) for k, v in x.items()})
                elif isinstance(x, tuple):
                    parts.update({f"{pos}.{k}": _scaled(v, w) for k, v in enumerate(x)})
                else:
                    parts[str(pos)] = _scaled(x, w)
            per_member.append(parts)
        if self._vector_critic:
            return torch.cat(per_member)
        return {k: torch.cat([p[k] for p in per_member]) for k in per_member[0]}

    def _critic_actions(self, actions: PerAgent, members: list[str], weight: PerAgent) -> Any:
        return torch.cat(
            [
                torch.cat([actions[b] * weight[b][:, None] for b in self.critic_order[a]], 1)
                for a in members
            ]
        )

    # -- actions --------------------------------------------------------------------------
    def _policy(
        self,
        view: Population[MADDPG],
        group: str,
        members: int,
        x: Any,
        mask: torch.Tensor | None,
        mode: str,
        target: bool = False,
    ) -> torch.Tensor:
        """Critic features of the group's actions for preprocessed observations ``x`` of
        ``members`` members: ``mode`` "greedy", "sample" (categorical) or "relaxed"
        (with gradient)."""
        out = self._actor_out(view, group, members, x, target)
        codec = self.codecs[self.groups[group][0]]
        return out if codec.continuous else codec.choose(out, mask, mode)

    def _actor_out(
        self, view: Population[MADDPG], group: str, members: int, x: Any, target: bool = False
    ) -> torch.Tensor:
        """The group's actor's (or target actor's) output for ``x``: normalised Box
        actions or logits (the one place the actors run), each team's rows on its own."""
        actor = view.net(self.net_name("actor_target" if target else "actor", group))
        out = actor.head(actor.encoder(view.team_major(x, members)))
        return view.member_major(out, members)

    def _act(
        self, view: Population[MADDPG], obs: PerAgent, infos: PerAgent | None, explore: bool
    ) -> PerAgent:
        """The actions of the teams of ``view`` for ``obs`` (team ``p``'s rows the
        ``p``-th block of every agent's), one forward per group; exploring, Box actions
        plus each team's own noise for its own rows."""
        actions: PerAgent = {}
        for group in self.groups:
            members = self.present(obs, group)
            if not members:
                continue
            codec = self.codecs[members[0]]
            x = self.group_obs(obs, members)
            mask = None if codec.continuous else self.group_mask(obs, infos, members)
            mode = "sample" if explore else "greedy"
            with torch.no_grad():
                features = self._policy(view, group, len(members), x, mask, mode)
            if explore and codec.continuous:
                noise = view.team_drawn(
                    lambda team, rows, g=group: team._exploration_noise(g, rows),
                    features.shape[0], len(members), whole=True,
                )  # fmt: skip
                features = features + torch.as_tensor(noise).to(features)
            env_actions = codec.to_env(features)
            n = leading(x) // len(members)
            for i, agent in enumerate(members):
                actions[agent] = env_actions[i * n : (i + 1) * n]
        return actions

    def _exploration_noise(self, group: str, rows: int) -> np.ndarray:
        """The group's next exploration noise ``[rows, dim]`` (its noise state, this
        team's generator; a cohort draws each team's rows from the team's own)."""
        return self.noise[group].sample(self.rng, rows)

    def explore(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """Exploratory actions: Box actions plus the noise (one state per sub-environment
        and agent), categorical ones sampled from the masked policy."""
        return self._act(Population.of(self), obs, infos, explore=True)

    def act(
        self, view: Population[MADDPG], obs: PerAgent, infos: PerAgent | None = None
    ) -> PerAgent:
        """Every team of ``view`` exploring on its block of ``obs`` (:meth:`explore` for
        one): one forward per group, each team's own noise on its own rows."""
        return self._act(view, obs, infos, explore=True)

    def get_action(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """The deterministic actors' actions (the best allowed choice for categorical ones)."""
        return self._act(Population.of(self), obs, infos, explore=False)

    def episodes_ended(self, ended: np.ndarray) -> None:
        """Restart the noise of the sub-environments whose episode ended (every agent's)."""
        ended = np.asarray(ended, dtype=bool).reshape(-1)
        for group, noise in self.noise.items():
            noise.reset(np.tile(ended, len(self.groups[group])))

    # -- learning -------------------------------------------------------------------------
    def _target_actions(
        self,
        view: Population[MADDPG],
        next_features: PerAgent,
        next_masks: PerAgent,
        live: np.ndarray | None,
    ) -> PerAgent:
        out = {}
        for group, members in self.groups.items():
            x = _cat_tree([next_features[a] for a in members])
            masks = [m for m in (next_masks.get(a) for a in members) if m is not None]
            mask = torch.cat(masks) if len(masks) == len(members) else None
            action = self._policy(view, group, len(members), x, mask, "greedy", target=True)
            if self.policy_noise > 0 and self.codecs[members[0]].continuous:
                shape = tuple(action.shape)
                smoothing = view.team_drawn(
                    lambda team, rows, tail=shape[1:]: team._smoothing((rows, *tail)),
                    shape[0], len(members), live,
                )  # fmt: skip
                action = (action + torch.as_tensor(smoothing).to(action)).clamp(-1.0, 1.0)
            n = action.shape[0] // len(members)
            out.update({a: action[i * n : (i + 1) * n] for i, a in enumerate(members)})
        return out

    def _smoothing(self, shape: tuple[int, ...]) -> np.ndarray:
        """Target policy smoothing noise of ``shape`` from this team's generator, clipped
        (a cohort draws each team's rows from the team's own)."""
        return smoothing_noise(self.rng, shape, self.policy_noise, self.noise_clip)

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The target value from the target critics' values: MADDPG's one critic's."""
        return values[0]

    def _masks(self, obs: PerAgent, batch: Mapping[str, Any], key: str) -> PerAgent:
        """Masks of the batch's choices: a Dict observation's ``action_mask``, else the
        batch's ``key`` entry (``action_mask`` / ``next_action_mask``) when it has one."""
        given = batch.get(key) or {}
        out = {}
        for agent in self.agent_ids:
            if self.codecs[agent].continuous:
                continue
            found = self.group_mask(obs, given, [agent])
            if found is not None:
                out[agent] = found
        return out

    def learn(self, batch: Mapping[str, Any]) -> dict[str, float]:
        """One learning step on a sample of :class:`~agilerl.families.multi_agent.buffers.
        MultiAgentReplayBuffer` (``obs``, ``action``, ``reward``, ``next_obs``, ``done``
        = terminated, ``active``: each per agent ``[B, ...]``). See the module docstring.
        Returns :attr:`learn_metrics` (``actor_loss`` on the calls that update the actors:
        every ``policy_freq``-th)."""
        return learned(self.update(Population.of(self), batch))

    def update(
        self,
        view: Population[MADDPG],
        batch: Mapping[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        """One learning call of the teams of ``view`` that ``live`` names (None: all),
        each on its rows of ``batch`` (team ``p``'s first ``batch_size`` rows of the
        ``p``-th block of every agent's; :meth:`learn` for one): every such team's
        critics step, and its actors and targets where its own ``policy_freq`` says so
        (a team not due keeps them, and its actor optimisers' moments, bit-equal). Each
        team's losses, ``gamma``, ``tau``, learning rates and smoothing draws are its
        own. The metrics each reported (None: it did not learn); ``generators`` are
        unused (a team's draws come from its own generator)."""
        learning = [p for p in range(view.count) if live is None or live[p]]
        if not learning:
            return [None] * view.count
        inputs = self.learning_inputs(view, batch, live)
        figures: dict[int, dict[str, list[torch.Tensor]]] = {
            p: {"critic_loss": [], "q_mean": [], "actor_loss": []} for p in learning
        }
        for group, members in self.groups.items():
            qs, target, active = self.critic_values(view, group, members, inputs)
            losses = []
            for p, rows in view.team_blocks(target.shape[0], len(members), live):
                own = view.own(active, rows)
                loss = view.agents[p].critic_loss(
                    [view.own(q, rows) for q in qs], view.own(target, rows), own
                )
                figures[p]["critic_loss"].append(loss.detach())
                figures[p]["q_mean"].append(masked_mean(view.own(qs[0], rows).detach(), own))
                losses.append(loss)
            view.minimise(
                self.net_name("critic_optimizer", group), view.total(losses),
                view.live_mask(live), self.max_grad_norm,
            )  # fmt: skip
        for p in learning:
            view.agents[p].learn_counter += 1
        due = [
            p for p in learning if view.agents[p].learn_counter % view.agents[p].policy_freq == 0
        ]
        if due:
            due_mask = view.mask_of(due)
            stepping = np.isin(np.arange(view.count), due)
            for group, members in self.groups.items():
                q, active = self.policy_values(view, group, members, inputs)
                losses = []
                for p, rows in view.team_blocks(q.shape[0], len(members), stepping):
                    loss = view.agents[p].actor_loss(view.own(q, rows), view.own(active, rows))
                    figures[p]["actor_loss"].append(loss.detach())
                    losses.append(loss)
                view.minimise(
                    self.net_name("actor_optimizer", group), view.total(losses), due_mask,
                    self.max_grad_norm,
                )  # fmt: skip
            view.polyak(due_mask)
        return view.reported(
            {
                p: {name: torch.stack(values).mean() for name, values in named.items() if values}
                for p, named in figures.items()
            }
        )

    # The learning step in parts: the networks' parts (``learning_inputs``,
    # ``critic_values``, ``policy_values``) run once for the teams of a view, each team's
    # losses (``critic_loss``, ``actor_loss``) on its own rows.
    def learning_inputs(
        self, view: Population[MADDPG], batch: Mapping[str, Any], live: np.ndarray | None = None
    ) -> LearningInputs:
        """What every group's update of one learning call reads (:class:`LearningInputs`),
        the target actions smoothed by the draws of the teams ``live`` names."""
        obs, next_obs = batch["obs"], batch["next_obs"]
        rows = leading(obs[self.agent_ids[0]])
        weight = {a: active_rows(batch["active"], a, rows, self.device) for a in self.agent_ids}
        next_features = self._features(next_obs)
        with torch.no_grad():
            next_actions = self._target_actions(
                view, next_features, self._masks(next_obs, batch, "next_action_mask"), live
            )
        return LearningInputs(
            batch=batch,
            weight=weight,
            features=self._features(obs),
            next_features=next_features,
            actions={
                a: self.codecs[a].to_critic(batch["action"][a], self.device) for a in self.agent_ids
            },
            next_actions=next_actions,
            masks=self._masks(obs, batch, "action_mask"),
        )

    def critic_values(
        self, view: Population[MADDPG], group: str, members: list[str], inputs: LearningInputs
    ) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
        """Every critic's ``Q`` of the group's rows (member by member), their (no-gradient)
        TD targets (each team's ``gamma`` on its rows), and the rows' activity."""
        weight = inputs.weight
        own = torch.cat([weight[a] for a in members])
        count = len(members)
        with torch.no_grad():
            x_next = self._critic_obs(inputs.next_features, members, weight)
            a_next = self._critic_actions(inputs.next_actions, members, weight)
            next_q = self._combine(
                [
                    self._q(view, f"{name}_target", group, count, x_next, a_next)
                    for name in self.critics
                ]
            )
            reward, done = inputs.batch["reward"], inputs.batch["done"]
            gamma = view.per_row("gamma", view.rows(weight[members[0]].shape[0]))
            # Member by member: a view's ``gamma`` is one per row of a member's batch.
            target = torch.cat(
                [
                    _flat(reward[a], self.device) + gamma * (1.0 - _flat(done[a], self.device)) * q
                    for a, q in zip(members, next_q.chunk(count), strict=True)
                ]
            )
        x = self._critic_obs(inputs.features, members, weight)
        a = self._critic_actions(inputs.actions, members, weight)
        return [self._q(view, name, group, count, x, a) for name in self.critics], target, own

    def critic_loss(
        self, qs: list[torch.Tensor], target: torch.Tensor, own: torch.Tensor
    ) -> torch.Tensor:
        """The critics' loss: the sum of their mean squared TD errors over active rows."""
        return sum(masked_mean((q - target) ** 2, own) for q in qs)  # type: ignore[return-value]

    def policy_values(
        self, view: Population[MADDPG], group: str, members: list[str], inputs: LearningInputs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The first critic's ``Q`` of the group's rows with each member's own action from
        its actor (differentiable in the actor), and the rows' activity."""
        features, actions, weight = inputs.features, inputs.actions, inputs.weight
        x = _cat_tree([features[a] for a in members])
        found = [m for m in (inputs.masks.get(a) for a in members) if m is not None]
        mask = torch.cat(found) if len(found) == len(members) else None
        mine = self._policy(view, group, len(members), x, mask, "relaxed")
        n = mine.shape[0] // len(members)
        # Each member's critic input has its own new action; the others' are the batch's.
        with_own = [
            self._critic_actions({**actions, a: mine[i * n : (i + 1) * n]}, [a], weight)
            for i, a in enumerate(members)
        ]
        q = self._q(view, self.critics[0], group, len(members),
                    self._critic_obs(features, members, weight), torch.cat(with_own))  # fmt: skip
        return q, torch.cat([weight[a] for a in members])

    def actor_loss(self, q: torch.Tensor, own: torch.Tensor) -> torch.Tensor:
        """The actors' loss: minus the mean ``Q`` of the active rows."""
        return -masked_mean(q, own)

    def _q(
        self,
        view: Population[MADDPG],
        name: str,
        group: str,
        members: int,
        x: Any,
        action: torch.Tensor,
    ) -> torch.Tensor:
        critic = view.net(self.net_name(name, group))
        x, action = view.team_major(x, members), view.team_major(action, members)
        return view.member_major(critic.from_latent(critic.encoder(x), action).reshape(-1), members)

    def soft_update(self) -> None:
        """``target <- tau * online + (1 - tau) * target`` for every target network."""
        targets, online = [], []
        for target, source in self.target_networks.items():
            targets.extend(getattr(self, target).parameters())
            online.extend(getattr(self, source).parameters())
        polyak_update(targets, online, self.tau)

    # -- checkpoints ----------------------------------------------------------------------
    def extra_state(self) -> dict[str, Any]:
        """The learn counter and every group's exploration noise state."""
        return {
            "learn_counter": self.learn_counter,
            "noise": {g: noise.state_dict() for g, noise in self.noise.items()},
        }

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        checkpoints.require(state, {"learn_counter": int, "noise": dict}, where)
        if state["learn_counter"] < 0:
            raise checkpoints.fail(checkpoints.join(where, "learn_counter"), "negative")
        at = checkpoints.join(where, "noise")
        checkpoints.require_keys(state["noise"], list(self.noise), at, "a group with noise")
        for group, noise in self.noise.items():
            noise.load_state_dict(state["noise"][group], checkpoints.join(at, group))
        self.learn_counter = state["learn_counter"]


def _scaled(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``x`` with each row multiplied by its weight (any trailing shape)."""
    return x * weight.reshape(-1, *([1] * (x.dim() - 1)))


def _cat_tree(items: list[Any]) -> Any:
    if isinstance(items[0], dict):
        return {k: torch.cat([i[k] for i in items]) for k in items[0]}
    if isinstance(items[0], tuple):
        return tuple(torch.cat(parts) for parts in zip(*items, strict=True))
    return torch.cat(items)


def _flat(value: Any, device: torch.device) -> torch.Tensor:
    tensor = value if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
    return tensor.to(device=device, dtype=torch.float32).reshape(-1)
