"""``DDPG``: deep deterministic policy gradient for Box actions (Lillicrap et al., 2016).

A deterministic actor (:class:`DeterministicActor`, tanh scaled to the action bounds)
and a critic ``Q(s, a)`` (:class:`ContinuousQNetwork`), each with a Polyak-averaged
target network and its own Adam optimiser (``lr_actor``, ``lr_critic``).

Actions inside the agent are *normalised*: every dimension spans [-1, 1] (the actor's
tanh output). The critic reads normalised actions, so its input is well scaled whatever
the bounds; the environment and the replay buffer see actions in the bounds.

One learning step (:meth:`DDPG.learn`), as AgileRL's DDPG does it (TD3's target
smoothing and delayed updates included)::

    a'  = clip(actor_target(s') + clip(N(0, policy_noise), -noise_clip, noise_clip), -1, 1)
    y   = r + gamma * (1 - done) * Q_target(s', a')
    critic loss = mean((Q(s, a) - y)^2)                        every call
    actor loss  = -mean(Q(s, actor(s)))                        every ``policy_freq`` calls,
    targets <- tau * online + (1 - tau) * targets              with the actor update

Exploration (:meth:`explore`): the actor's action plus Ornstein-Uhlenbeck
(``O_U_noise``) or Gaussian noise of scale ``expl_noise`` (in normalised units, so a
share of the action range), one noise state per sub-environment, reset where an episode
ended (:mod:`agilerl.components.action_noise`), clipped to the bounds.

``share_encoders``: the critic uses the actor's encoder module itself (one encoder pass
per batch for both). The encoder is then trained by the critic loss only: the actor's
update reads detached features, so the policy gradient cannot reshape the features the
critic's values rest on (the scheme of SAC-AE / DrQ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces
from torch.nn import functional

from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.core.rl_algorithm import RLAlgorithm
from agilerl.algorithms.optim import polyak_update
from agilerl.components.action_noise import (
    ActionNoise,
    GaussianNoise,
    OrnsteinUhlenbeckNoise,
    smoothing_noise,
)
from agilerl.components.observations import leading_size
from agilerl.files import checkpoints
from agilerl.models.networks import ContinuousQNetworkSpec, DeterministicActorSpec
from agilerl.modules.base import respec
from agilerl.networks.base import Observation, preprocess
from agilerl.networks.networks import ContinuousQNetwork, DeterministicActor

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.ddpg_schema import DDPGSpec
else:
    from agilerl.models.algorithms.ddpg import DDPGSpec


class DDPG(RLAlgorithm, spec=DDPGSpec):
    """DDPG (module docstring). ``learn_step`` and ``batch_size`` are read by the
    training loop (environment steps between updates, transitions per update)."""

    default_mutable: ClassVar[tuple[str, ...]] = (
        "lr_actor",
        "lr_critic",
        "batch_size",
        "learn_step",
    )
    #: The critics, each with its target ``<name>_target``: TD3 declares two.
    critics: ClassVar[tuple[str, ...]] = ("critic",)
    eval_networks: ClassVar[tuple[str, ...]] = ("actor", "critic")
    target_networks: ClassVar[Mapping[str, str]] = {
        "actor_target": "actor",
        "critic_target": "critic",
    }
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "actor_optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic",), "lr_critic"),
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "critic_loss": "mean squared TD error of the batch (summed over the critics)",
        "actor_loss": "-mean Q of the actor's actions (reported on the calls that update it)",
        "q_mean": "mean Q-value of the first critic for the actions taken in the batch",
    }
    main_loss: ClassVar[str | None] = "critic_loss"
    #: Target policy smoothing (TD3's, which AgileRL's DDPG applies too): the standard
    #: deviation and clip of the noise on the target actor's action, in normalised units.
    policy_noise: ClassVar[float] = 0.2
    #: Attributes the update reads from the view's first agent for every agent:
    #: ``share_encoders`` decides which modules the critics run and which parameters each
    #: optimiser holds; ``max_grad_norm`` is the one clip of a stacked step.
    cohort_same: ClassVar[tuple[str, ...]] = ("share_encoders", "max_grad_norm")
    #: Learns in cohorts (TD3 inherits it).
    learns_in_cohorts: ClassVar[bool] = True
    noise_clip: ClassVar[float] = 0.5

    #: Checked in ``__init__``: the actor's output is scaled to a Box.
    action_space: spaces.Box

    # Set from the bound spec (``DDPGSpec``, ``TD3Spec``) before the body runs.
    batch_size: int
    learn_step: int
    gamma: float
    vect_noise_dim: int
    lr_actor: float
    lr_critic: float
    tau: float
    policy_freq: int
    O_U_noise: bool
    expl_noise: float
    mean_noise: float
    theta: float
    dt: float
    share_encoders: bool
    #: The gradient-norm clip of every update (None: none, as AgileRL's DDPG and TD3):
    #: a rare huge TD error moves the weights by a bounded step.
    max_grad_norm: float | None

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: the bound spec's
        (``inspect.signature(DDPG)``)."""
        super().__init__(observation_space, action_space, index, **options)
        if not isinstance(action_space, spaces.Box):
            raise TypeError(f"{self.name} needs a Box action space, got {action_space!r}")
        if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            raise ValueError(f"{self.name} needs bounded actions (finite low and high)")
        action_dim = int(np.prod(action_space.shape))
        self.noise = self._make_noise(action_dim)
        #: Calls of :meth:`learn` so far: the actor and targets update every policy_freq.
        self.learn_counter = 0
        low = np.asarray(action_space.low, np.float32).reshape(-1)
        high = np.asarray(action_space.high, np.float32).reshape(-1)
        # Normalised action u in [-1, 1]  <->  env action  mid + u * half.
        self._mid, self._half = (high + low) / 2, (high - low) / 2
        self._mid_t = torch.as_tensor(self._mid, device=self.device)
        self._half_t = torch.as_tensor(self._half, device=self.device)
        self._polyak_cache: tuple[tuple[Any, ...], list[Any], list[Any]] = ((), [], [])

        self.actor = DeterministicActor(
            observation_space, action_space, self.network_spec(DeterministicActorSpec)
        ).to(self.device)
        critic_spec = self.network_spec(ContinuousQNetworkSpec)
        # The manifest's network section describes the actor: a critic's value is not
        # squashed (a Tanh output, right for the actor's head, would cap Q at 1).
        head = respec(critic_spec.head_config, output_activation=None)
        critic_spec = respec(critic_spec, head_config=head.model_dump())
        for i, name in enumerate(self.critics):
            spec = critic_spec
            if spec.random_seed is not None:  # twin critics must not start identical
                spec = respec(spec, random_seed=spec.random_seed + i)
            critic = ContinuousQNetwork(observation_space, action_space, spec)
            setattr(self, name, critic.to(self.device))
        self.finish_init()

    def _make_noise(self, action_dim: int) -> ActionNoise:
        if self.O_U_noise:
            return OrnsteinUhlenbeckNoise(
                action_dim, self.vect_noise_dim, self.mean_noise, self.expl_noise,
                self.theta, self.dt,
            )  # fmt: skip
        return GaussianNoise(action_dim, self.vect_noise_dim, self.mean_noise, self.expl_noise)

    # -- shared encoder -------------------------------------------------------------------
    def _link_networks(self) -> None:
        """Give every critic the actor's encoder (and the matching spec fields)."""
        if not self.share_encoders:
            return
        spec = self.actor.spec
        for name in self.critics:
            critic = getattr(self, name)
            critic.encoder = self.actor.encoder
            if (
                critic.spec.encoder_config != spec.encoder_config
                or critic.spec.latent_dim != spec.latent_dim
            ):
                critic.spec = respec(
                    critic.spec,
                    encoder_config=spec.encoder_config.model_dump(),
                    latent_dim=spec.latent_dim,
                )

    def _unlink_networks(self) -> None:
        """An independent copy of the shared encoder per critic, so a mutation replayed on
        every network with one seed leaves identical encoders (then relinked)."""
        if self.share_encoders:
            for name in self.critics:
                getattr(self, name).encoder = self.actor.encoder.clone()

    # -- actions --------------------------------------------------------------------------
    def _preprocess(self, obs: Observation) -> Any:
        return preprocess(obs, self.observation_space, self.device)

    def _normalise(self, action: Any) -> torch.Tensor:
        """Env actions ``(batch, *shape)`` -> normalised ``(batch, action_dim)``."""
        action = torch.as_tensor(action, device=self.device, dtype=torch.float32)
        return (action.reshape(action.shape[0], -1) - self._mid_t) / self._half_t

    def _to_env(self, normalised: np.ndarray) -> np.ndarray:
        env = self._mid + np.clip(normalised, -1.0, 1.0) * self._half
        return env.astype(self.action_space.dtype, copy=False).reshape(-1, *self.action_space.shape)

    def _policy(self, obs: Observation, actor: Any = None) -> np.ndarray:
        """The normalised actions ``(batch, action_dim)`` of ``actor`` (None: this agent's),
        as numpy."""
        actor = self.actor if actor is None else actor
        with torch.inference_mode():
            return actor.head(actor.encoder(self._preprocess(obs))).cpu().numpy()

    def get_action(
        self, obs: Observation, training: bool = True, policy: np.ndarray | None = None
    ) -> np.ndarray:
        """Actions for a batch of observations, in the bounds: the actor's (``policy``
        when already computed), plus the exploration noise (one state row per observation
        of the batch) with ``training``."""
        action = self._policy(obs) if policy is None else policy
        if training:
            action = action + self.noise.sample(self.rng, action.shape[0])
        return self._to_env(action)

    def explore(
        self, obs: Observation, action_mask: Any = None, policy: np.ndarray | None = None
    ) -> np.ndarray:
        """The actor's actions (``policy`` when already computed) plus the exploration
        noise (``action_mask`` is for discrete actions; a Box has none)."""
        return self.get_action(obs, training=True, policy=policy)

    def act(
        self, view: Population[DDPG], obs: Observation, action_mask: Any, uniform: np.ndarray
    ) -> np.ndarray:
        """Every agent of ``view`` exploring on its block of ``obs``: one forward of the
        view's actor, then each agent's own :meth:`explore` (its noise state, its
        generator) on its block of the actions; uniform actions for the agents
        ``uniform`` names."""

        def own(agent: DDPG, own_obs: Any, _mask: Any, policy: Any) -> np.ndarray:
            return agent.explore(own_obs, policy=policy)

        return view.act(
            obs, action_mask, uniform, lambda rows: self._policy(rows, view.net("actor")), own
        )

    def uniform_actions(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Uniform in the bounds (uniform in the normalised [-1, 1] per dimension)."""
        normalised = self.rng.uniform(-1.0, 1.0, (leading_size(obs), self._mid.size))
        return self._to_env(normalised)

    def episodes_ended(self, ended: np.ndarray) -> None:
        """Restart the noise of the sub-environments whose episode ended."""
        self.noise.reset(ended)

    def eval_action(
        self, obs: Observation, action_mask: Any = None, actor: Any = None
    ) -> np.ndarray:
        """The deterministic actor's actions: this agent's, or ``actor``'s when given (a
        network of its architecture, e.g. a cohort's stacked one)."""
        policy = None if actor is None else self._policy(obs, actor)
        return self.get_action(obs, training=False, policy=policy)

    def sample_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """The actor's actions plus independent Gaussian noise ``N(mean_noise,
        expl_noise)`` (normalised units), clipped to the bounds. The exploration state
        (an Ornstein-Uhlenbeck process per training environment) is left as it was."""
        action = self._policy(obs)
        noise = self.mean_noise + self.expl_noise * self.rng.standard_normal(action.shape)
        return self._to_env(action + noise)

    def q_values(self, obs: Observation, action: Any) -> torch.Tensor:
        """``Q(s, a)`` of every critic for env actions ``a``: ``(n_critics, batch)``."""
        x = self._preprocess(obs)
        action = self._normalise(action)
        with torch.no_grad():
            latent = self.actor.encoder(x) if self.share_encoders else None
            return torch.stack([self._q(getattr(self, n), x, action, latent) for n in self.critics])

    # -- learning -------------------------------------------------------------------------
    def _q(self, critic: ContinuousQNetwork, x: Any, action: torch.Tensor, latent: Any) -> Any:
        """``Q(x, action)`` ``(batch,)``, reusing ``latent`` when the critic shares it."""
        features = latent if latent is not None and self.share_encoders else critic.encoder(x)
        return critic.from_latent(features, action).reshape(-1)

    def _target_values(
        self, view: Population[DDPG], next_obs: Any, live: np.ndarray | None
    ) -> torch.Tensor:
        """Target critics' value of the smoothed target action, combined across the
        critics by :meth:`_combine` ``(batch,)``; each learning agent's smoothing noise
        drawn for its own rows (:meth:`_smoothing`)."""
        x = self._preprocess(next_obs)
        actor_target = view.net("actor_target")
        latent = actor_target.encoder(x)
        next_action = actor_target.head(latent)
        smoothing = view.drawn(_smoothing_of, tuple(next_action.shape), live)
        next_action = (next_action + torch.as_tensor(smoothing).to(next_action)).clamp(-1.0, 1.0)
        # Targets are separate copies even when the online networks share an encoder;
        # those copies follow one source from one start, so they stay equal and the
        # target actor's features serve every target critic.
        values = []
        for name in self.critics:
            target = view.net(f"{name}_target")
            features = latent if self.share_encoders else target.encoder(x)
            values.append(target.from_latent(features, next_action).reshape(-1))
        return self._combine(values)

    def _smoothing(self, shape: tuple[int, ...]) -> np.ndarray:
        """Target policy smoothing noise of ``shape`` from this agent's generator, clipped
        (every agent of a view draws its own rows from its own)."""
        return smoothing_noise(self.rng, shape, self.policy_noise, self.noise_clip)

    def _combine(self, values: list[torch.Tensor]) -> torch.Tensor:
        """The target value from the target critics' values: DDPG's one critic's."""
        return values[0]

    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        """One learning step on a batch of transitions (a :class:`ReplayBuffer` sample:
        ``obs``, ``action`` in the bounds, ``reward``, ``next_obs``, ``done`` = terminated;
        a truncated episode still bootstraps): :meth:`update` of this agent alone. Returns
        :attr:`learn_metrics` (``actor_loss`` only on the calls that update the actor:
        every ``policy_freq``-th)."""
        return learned(self.update(Population.of(self), batch))

    def update(
        self,
        view: Population[DDPG],
        batch: dict[str, Any],
        live: np.ndarray | None = None,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        """One learning call of the agents of ``view`` that ``live`` names (None: all),
        each on its rows of ``batch`` (see the module docstring for the losses): every
        such agent's critics step, and its actor and targets where its own
        ``policy_freq`` says so (an agent not due keeps its actor, its actor optimiser's
        moments and its targets bit-equal). The metrics each reported (None: it did not
        learn). The smoothing noise is each agent's own draw (``generators`` serve the
        algorithms that draw from torch's)."""
        x, qs, target = self._critic_values(view, batch, live)
        figures: dict[int, dict[str, torch.Tensor]] = {}
        losses = []
        blocks = view.blocks(target.shape[0], live)
        for p, rows in blocks:
            loss = view.agents[p]._critic_loss(
                [view.own(q, rows) for q in qs], view.own(target, rows)
            )
            figures[p] = {
                "critic_loss": loss.detach(),
                "q_mean": view.own(qs[0], rows).detach().mean(),
            }
            losses.append(loss)
        if not losses:
            return [None] * view.count
        mask = view.live_mask(live)
        view.minimise("critic_optimizer", view.total(losses), mask, self.max_grad_norm)
        for p, _ in blocks:
            view.agents[p].learn_counter += 1
        due = [
            (p, rows)
            for p, rows in blocks
            if view.agents[p].learn_counter % view.agents[p].policy_freq == 0
        ]
        if due:
            values = self._policy_values(view, x)
            losses = []
            for p, rows in due:
                loss = view.agents[p]._actor_loss(view.own(values, rows))
                figures[p]["actor_loss"] = loss.detach()
                losses.append(loss)
            due_mask = view.mask_of([p for p, _ in due])
            view.minimise("actor_optimizer", view.total(losses), due_mask, self.max_grad_norm)
            view.polyak(due_mask)
        return view.reported(figures)

    def _critic_values(
        self, view: Population[DDPG], batch: dict[str, Any], live: np.ndarray | None
    ) -> tuple[Any, list[torch.Tensor], torch.Tensor]:
        """The networks' part of the critic update: the preprocessed observations, every
        critic's ``Q(s, a)`` of the batch ``(batch,)`` and the (no-gradient) TD targets
        ``(batch,)``, each agent's ``gamma`` on its rows."""
        x = self._preprocess(batch["obs"])
        action = self._normalise(batch["action"])
        with torch.no_grad():
            next_q = self._target_values(view, batch["next_obs"], live)
            reward = torch.as_tensor(batch["reward"], device=self.device).to(next_q).reshape(-1)
            done = torch.as_tensor(batch["done"], device=self.device).to(next_q).reshape(-1)
            gamma = view.per_row("gamma", view.rows(next_q.shape[0]))
            target = reward + gamma * (1.0 - done) * next_q
        latent = view.net("actor").encoder(x) if self.share_encoders else None
        qs = [self._q(view.net(name), x, action, latent) for name in self.critics]
        return x, qs, target

    def _critic_loss(self, qs: list[torch.Tensor], target: torch.Tensor) -> torch.Tensor:
        """The critics' loss: the sum of their mean squared TD errors."""
        losses = [functional.mse_loss(q, target) for q in qs]
        total = losses[0]  # what sum() gives (0 + a == a exactly), typed as a tensor
        for loss in losses[1:]:
            total = total + loss
        return total

    def _policy_values(self, view: Population[DDPG], x: Any) -> torch.Tensor:
        """The networks' part of the actor update: the first critic's ``Q`` of the actor's
        actions ``(batch,)``, differentiable in the actor's parameters (its encoder's only
        without ``share_encoders``)."""
        actor = view.net("actor")
        latent = actor.encoder(x)
        if self.share_encoders:
            latent = latent.detach()  # the critic loss alone trains the shared encoder
        action = actor.head(latent)
        return self._q(view.net(self.critics[0]), x, action, latent)

    def _actor_loss(self, values: torch.Tensor) -> torch.Tensor:
        """The actor's loss from :meth:`_policy_values`: minus the mean ``Q``."""
        return -values.mean()

    def _polyak_pairs(self) -> tuple[list[Any], list[Any]]:
        """Target and online parameters, position by position, cached per set of network
        objects (the base class replaces networks, never their parameters)."""
        nets = tuple(getattr(self, n) for pair in self.target_networks.items() for n in pair)
        cached = self._polyak_cache[0]
        if len(cached) != len(nets) or any(a is not b for a, b in zip(cached, nets, strict=True)):
            tgt, src = [], []
            for target, source in self.target_networks.items():
                tgt.extend(getattr(self, target).parameters())
                src.extend(getattr(self, source).parameters())
            self._polyak_cache = (nets, tgt, src)
        return self._polyak_cache[1], self._polyak_cache[2]

    def soft_update(self) -> None:
        """``target <- tau * online + (1 - tau) * target`` for every target network."""
        polyak_update(*self._polyak_pairs(), self.tau)

    # -- checkpoints ----------------------------------------------------------------------
    def extra_state(self) -> dict[str, Any]:
        """The learn counter (the actor's update phase) and the exploration noise state."""
        return {"learn_counter": self.learn_counter, "noise": self.noise.state_dict()}

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        checkpoints.require(state, {"learn_counter": int, "noise": dict}, where)
        if state["learn_counter"] < 0:
            raise checkpoints.fail(checkpoints.join(where, "learn_counter"), "negative")
        self.noise.load_state_dict(state["noise"], checkpoints.join(where, "noise"))
        self.learn_counter = state["learn_counter"]


def _smoothing_of(agent: DDPG, shape: tuple[int, ...]) -> np.ndarray:
    """Agent ``agent``'s own smoothing draw (a subclass may draw its own way)."""
    return agent._smoothing(shape)
