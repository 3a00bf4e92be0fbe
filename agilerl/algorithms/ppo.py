"""Proximal Policy Optimisation (Schulman et al., 2017) with a clipped surrogate objective,
optionally recurrent.

An actor (:class:`StochasticActor`) and a critic (:class:`ValueNetwork`) trained by one Adam
optimiser on rollouts of a vectorised environment (:meth:`PPO.collect_rollouts`, then
:meth:`PPO.learn`). With ``share_encoders`` (the default) the critic uses the actor's
encoder module itself, so the encoder runs once per forward pass for both heads and learns
from the policy and the value losses together. The action distribution comes from the
action space (:mod:`agilerl.networks.distributions`), through the actor.

Loss per minibatch (advantages normalised within the minibatch)::

    ratio = exp(log_prob - old_log_prob)
    policy_loss = -mean(min(A * ratio, A * clip(ratio, 1 - clip_coef, 1 + clip_coef)))
    value_loss = 0.5 * mean(max((V - R)^2, (V_clipped - R)^2)),
        V_clipped = V_old + clip(V - V_old, -clip_coef, clip_coef)
    loss = policy_loss - ent_coef * entropy + vf_coef * value_loss

The value is clipped around the rollout's values with ``clip_coef``, as AgileRL does.

Recurrent PPO (``recurrent=True``): the encoders are LSTMs (inferred for a vector
observation space; any other encoder is refused). The hidden state is carried from step
to step per sub-environment and zeroed for the environments whose episode ended, in
rollouts (carried across rollouts like the episode returns) and when acting
(:meth:`PPO.eval_action`, :meth:`PPO.sample_action`, :meth:`PPO.get_action`, hence
``test`` and ``predict``; :meth:`RLAlgorithm.episodes_ended` resets it). Learning is
truncated backpropagation through time: each environment's rollout is cut into sequences
of ``max_seq_len`` steps (``null``: the whole rollout) laid out by
``bptt_sequence_type`` (:data:`~agilerl.components.rollout_buffer.SEQUENCE_STRIDES`);
each sequence starts from the hidden state stored with it and resets where an episode
ended inside it; a minibatch holds ``batch_size // max_seq_len`` whole sequences (at
least one). The hidden state is not checkpointed (a loaded or cloned agent starts every
episode afresh) and follows a mutated LSTM's size: a state that no longer fits the
encoder starts again from zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, TypeVar, cast

import numpy as np
import torch
from gymnasium import spaces
from pydantic import ValidationError

from agilerl.algorithms.core.population import Population, learned
from agilerl.algorithms.core.rl_algorithm import RLAlgorithm, action_mask_from_info
from agilerl.components import on_policy
from agilerl.components.normalization import Normalization
from agilerl.components.observations import map_tree, stack_tree, tree_leaves
from agilerl.components.rollout_buffer import SEQUENCE_STRIDES, RolloutBatch, RolloutBuffer
from agilerl.files import checkpoints
from agilerl.models.networks import LstmSpec, StochasticActorSpec, ValueNetworkSpec
from agilerl.modules.base import respec
from agilerl.modules.lstm import EvolvableLSTM
from agilerl.modules.multi_input import flat_dim, is_image_space
from agilerl.networks.base import EvolvableNetwork, Observation, preprocess
from agilerl.networks.networks import StochasticActor, ValueNetwork

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.ppo_schema import NormalizationConfig, PPOSpec, RolloutBufferConfig
else:
    from agilerl._generated.ppo_schema import NormalizationConfig, RolloutBufferConfig
    from agilerl.models.algorithms.ppo import PPOSpec

#: What :meth:`PPO.learn` reports (``RLAlgorithm.learn_metrics``); the first six are
#: means over the minibatches evaluated, in the order :func:`clipped_ppo_loss` stacks them.
LEARN_METRICS = {
    "loss": "total loss: policy loss - ent_coef * entropy + vf_coef * value loss",
    "policy_loss": "clipped surrogate policy loss",
    "value_loss": "clipped value loss (0.5 * squared error of the returns)",
    "entropy": "mean entropy of the action distribution",
    "approx_kl": "approximate KL divergence of the new policy from the rollout's",
    "clip_fraction": "fraction of samples whose probability ratio was clipped",
    "updates": "optimiser steps taken",
    "early_stop": "1 when target_kl ended the epochs early, else 0",
}
METRICS = tuple(LEARN_METRICS)[:6]

#: A recurrent state: network name ("actor", and "critic" when it has its own encoder)
#: -> the LSTM's ``(h, c)``, each ``(layers, envs, hidden_state_size)``.
HiddenState = dict[str, tuple[torch.Tensor, torch.Tensor]]


def _reset_rows(state: HiddenState | None, ended: np.ndarray) -> HiddenState | None:
    """``state`` with the rows of the environments whose episode ``ended`` zeroed."""
    if state is None or not ended.any():
        return state
    keep = torch.as_tensor(~ended).reshape(1, -1, 1)
    return map_tree(lambda x: x * keep.to(x), state)


#: The schema's default of ``rollout_buffer_config`` (``{}``), read-only so it can be
#: a signature default.
EMPTY_CONFIG: Mapping[str, Any] = MappingProxyType({})


def _rows(state: HiddenState, envs: Any) -> HiddenState:
    """The part of ``state`` of environments ``envs`` (e.g. the truncated ones)."""
    return map_tree(lambda x: x[:, envs], state)


class PPO(RLAlgorithm, spec=PPOSpec):
    """PPO for Discrete, MultiDiscrete, MultiBinary and Box actions (module docstring).

    ``learn_step`` environment steps (rounded up to whole vector steps) make one rollout;
    :meth:`learn` then runs ``update_epochs`` passes over it in minibatches of
    ``batch_size`` samples and stops early once the approximate KL divergence of a
    minibatch exceeds ``target_kl``. ``max_grad_norm`` 0 disables gradient clipping.
    """

    #: Attributes the agents of a cohort share (the shape of their rollouts and
    #: minibatches, and the code path): their minibatches line up.
    cohort_same: ClassVar[tuple[str, ...]] = (
        "num_envs",
        "learn_step",
        "batch_size",
        "share_encoders",
        "recurrent",
        "use_gae",
    )
    #: Learns in cohorts (a recurrent agent's networks do not stack: it trains alone).
    learns_in_cohorts: ClassVar[bool] = True
    #: Saved with the hyperparameters: a checkpoint rebuilds the networks it describes.
    extra_init_args: ClassVar[tuple[str, ...]] = ("net_config",)
    default_mutable = ("lr", "batch_size", "learn_step")
    eval_networks = ("actor", "critic")
    optimizer_specs = {"optimizer": (("actor", "critic"), "lr")}
    learn_metrics = LEARN_METRICS
    main_loss = "value_loss"

    # Set from the bound spec (``PPOSpec``) before the body runs.
    batch_size: int
    lr: float
    learn_step: int
    gamma: float
    num_envs: int
    gae_lambda: float
    action_std_init: float
    clip_coef: float
    ent_coef: float
    vf_coef: float
    max_grad_norm: float
    target_kl: float | None
    update_epochs: int
    recurrent: bool
    max_seq_len: int | None
    share_encoders: bool
    bptt_sequence_type: str

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        **options: Any,
    ) -> None:
        """Hyperparameters and their defaults: ``PPOSpec`` (``inspect.signature(PPO)``)."""
        super().__init__(observation_space, action_space, index, **options)
        rollout_buffer_config: Any = self.rollout_buffer_config
        if isinstance(rollout_buffer_config, RolloutBufferConfig):
            rollout_buffer_config = rollout_buffer_config.model_dump()
        # Kept as the spec model: hyperparameters() dumps it, a checkpoint validates it back.
        self.rollout_buffer_config = RolloutBufferConfig.model_validate(rollout_buffer_config or {})
        normalize: Any = self.normalize
        if isinstance(normalize, NormalizationConfig):
            normalize = normalize.model_dump()
        # Kept as the spec model (as rollout_buffer_config); the statistics are
        # :attr:`normalization`'s, saved in the agent's extra state.
        self.normalize = (
            None if normalize is None else NormalizationConfig.model_validate(normalize)
        )
        self.normalization = (
            None if self.normalize is None else Normalization(self.normalize, self._features())
        )

        actor_spec, critic_spec = self._network_specs()
        self.actor = StochasticActor(observation_space, action_space, actor_spec).to(self.device)
        self.critic = ValueNetwork(observation_space, None, critic_spec).to(self.device)
        if self.recurrent and not isinstance(self.actor.spec.encoder_config, LstmSpec):
            arch = self.actor.spec.encoder_config.arch
            raise ValueError(
                f"recurrent: true needs an LSTM encoder (network.encoder_config.arch: lstm, "
                f"on a vector observation space); this network's encoder is {arch!r} for "
                f"{observation_space!r}"
            )
        if self.action_std_init > 0:
            self.actor.distribution.set_initial_std(self.action_std_init)

        self.rollout_buffer: RolloutBuffer | None = None
        # Per-environment return of the episodes in progress, carried from one rollout to
        # the next together with the observation (and hidden state) they belong to.
        self._episode_returns: np.ndarray | None = None
        self._rollout_obs: Any = None
        self._rollout_state: HiddenState | None = None
        #: The hidden state :meth:`eval_action` / :meth:`sample_action` / :meth:`get_action`
        #: act on, one row per environment (recurrent only; None until they first act).
        self.hidden_state: HiddenState | None = None
        self.finish_init()

    def _features(self) -> int | None:
        """The size of a preprocessed observation that ``normalize.observation`` normalises
        (None when it is off); refused for spaces other than a vector Box."""
        assert self.normalize is not None
        if not self.normalize.observation:
            return None
        space = self.observation_space
        if not isinstance(space, spaces.Box) or is_image_space(space):
            raise ValueError(
                f"normalize.observation: running observation statistics need a vector Box "
                f"observation space, got {space!r}; set observation: false (images are "
                "scaled by the encoder)"
            )
        return flat_dim(space)

    def _network_specs(self) -> tuple[StochasticActorSpec, ValueNetworkSpec]:
        """The actor's and the critic's specs; a recurrent agent's encoder, where the
        network section names no arch, is an LSTM, and a section written for another
        encoder is refused saying so."""
        try:
            return (
                self.network_spec(StochasticActorSpec, recurrent=self.recurrent),
                self.network_spec(ValueNetworkSpec, recurrent=self.recurrent),
            )
        except ValidationError as err:
            if not self.recurrent:
                raise
            # "encoder_config.lstm.hidden_state_size" -> "network.encoder_config.hidden_state_size"
            problems = "; ".join(
                "network." + ".".join(str(p) for p in e["loc"] if p != "lstm") + f": {e['msg']}"
                for e in err.errors()
            )
            raise ValueError(
                "recurrent: true builds an LSTM encoder where network.arch / "
                "network.encoder_config.arch is not given, and network.encoder_config does "
                f"not describe one (an LSTM takes hidden_state_size, num_layers, ...): {problems}"
            ) from None

    # -- shared encoder -------------------------------------------------------------------
    def _link_networks(self) -> None:
        """Give the critic the actor's encoder (and the matching spec fields)."""
        if not self.share_encoders:
            return
        self.critic.encoder = self.actor.encoder
        spec = self.actor.spec
        if (
            self.critic.spec.encoder_config != spec.encoder_config
            or self.critic.spec.latent_dim != spec.latent_dim
        ):
            self.critic.spec = respec(
                self.critic.spec,
                encoder_config=spec.encoder_config.model_dump(),
                latent_dim=spec.latent_dim,
            )

    def _unlink_networks(self) -> None:
        """An independent copy of the shared encoder for the critic, so a mutation replayed
        on both networks with one seed leaves two identical encoders (then relinked)."""
        if self.share_encoders:
            self.critic.encoder = self.actor.encoder.clone()

    # -- recurrent state ------------------------------------------------------------------
    def _stateful_networks(self) -> dict[str, EvolvableNetwork]:
        """Networks whose encoder carries a hidden state, each encoder once: none unless
        recurrent; the actor, and the critic when it has its own encoder."""
        if not self.recurrent:
            return {}
        nets: dict[str, EvolvableNetwork] = {"actor": self.actor}
        if self.critic.encoder is not self.actor.encoder:
            nets["critic"] = self.critic
        return nets

    def initial_hidden_state(self, num_envs: int) -> HiddenState | None:
        """The zero state episodes start from, for ``num_envs`` environments (None for a
        feed-forward agent)."""
        nets = self._stateful_networks()
        if not nets:
            return None
        return {name: _lstm(net).initial_state(num_envs) for name, net in nets.items()}

    def _state_for(self, state: HiddenState | None, num_envs: int) -> HiddenState | None:
        """``state`` if it fits the encoders (a mutation may have resized them) and
        ``num_envs``; otherwise a fresh zero state."""
        fresh = self.initial_hidden_state(num_envs)
        if fresh is None or state is None or state.keys() != fresh.keys():
            return fresh
        shapes = [x.shape for x in tree_leaves(state)]
        return state if shapes == [x.shape for x in tree_leaves(fresh)] else fresh

    def episodes_ended(self, ended: np.ndarray) -> None:
        """Zero the acting hidden state of the environments whose episode ended (a row of
        bools, one per environment of the batch acted on)."""
        ended = np.asarray(ended, dtype=bool).reshape(-1)
        state = self.hidden_state
        if state is not None and tree_leaves(state)[0].shape[1] != len(ended):
            self.hidden_state = None  # another batch of environments: start afresh
            return
        self.hidden_state = _reset_rows(state, ended)

    # -- acting ---------------------------------------------------------------------------
    def _preprocess(self, obs: Observation, observe: bool = False) -> Any:
        """Observations as the networks take them: preprocessed and, with ``normalize``,
        normalised by the frozen running statistics; ``observe`` (a training rollout's
        observations) also keeps them for the statistics' next update."""
        # The module-level function with the agent's device: a network's own preprocess
        # looks its device up by walking its parameters, once per call (per env step here).
        x = preprocess(obs, self.observation_space, self.device)
        # Only a vector Box's observations (one tensor) have running statistics
        # (:meth:`_features`); for the others normalisation leaves them as they are.
        if self.normalization is None or not isinstance(x, torch.Tensor):
            return x
        if observe:
            self.normalization.observe(x)
        return self.normalization.normalize(x)

    def _forward_x(
        self,
        actor: Any,
        critic: Any,
        x: Any,
        mask: Any,
        state: HiddenState | None,
        with_value: bool = True,
    ) -> tuple[Any, torch.Tensor | None, HiddenState | None]:
        """Action distribution, value ``(batch,)`` (None when not ``with_value`` and the
        critic keeps no state of its own) and next hidden state (None for a feed-forward
        agent) of preprocessed observations ``x`` through ``actor`` and ``critic`` (the
        agent's own, or a view's: :meth:`Population.net`); a shared encoder runs once."""
        next_state: HiddenState = {}

        def encode(name: str, net: EvolvableNetwork) -> torch.Tensor:
            if state is None:
                return net.encoder(x)
            latent, next_state[name] = _lstm(net).forward_with_state(x, state[name])
            return latent

        latent = encode("actor", actor)
        dist = actor.distribution(actor.head(latent), mask)
        value = None
        if with_value or (state is not None and "critic" in state):
            if critic.encoder is not actor.encoder:
                latent = encode("critic", critic)
            value = critic.head(latent).squeeze(-1)
        return dist, value, (None if state is None else next_state)

    def _forward(self, obs: Observation, mask: Any = None) -> tuple[Any, torch.Tensor]:
        """Action distribution and value ``(batch,)`` of a batch of observations, each
        acted on from a fresh state (feed-forward: the only way)."""
        x = self._preprocess(obs)
        state = self.initial_hidden_state(_batch_of(x))
        dist, value, _ = self._forward_x(self.actor, self.critic, x, mask, state)
        assert value is not None  # with_value (the default): the critic ran
        return dist, value

    def _act(
        self, obs: Observation, mask: Any, deterministic: bool, with_value: bool, actor: Any = None
    ) -> tuple[torch.Tensor, Any, torch.Tensor | None]:
        """Sample (or mode), distribution and value of a batch of observations, acting
        on and advancing :attr:`hidden_state`; the policy of ``actor`` when given."""
        with torch.no_grad():
            x = self._preprocess(obs)
            state = self._state_for(self.hidden_state, _batch_of(x))
            dist, value, self.hidden_state = self._forward_x(
                self.actor if actor is None else actor, self.critic, x, mask, state, with_value
            )
            sample = dist.sample(deterministic)
        return sample, dist, value

    def get_action(
        self, obs: Observation, action_mask: Any = None
    ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample actions for a batch of observations: ``(action for env.step, log_prob,
        entropy, value)``, the last three of shape ``(batch,)``. ``action_mask`` (Discrete
        and MultiDiscrete actions) marks allowed actions with 1/True; for a Box space the
        log-probability is that of the unclipped sample. A recurrent agent acts on and
        advances :attr:`hidden_state`."""
        sample, dist, value = self._act(obs, action_mask, deterministic=False, with_value=True)
        with torch.no_grad():
            log_prob, entropy = dist.log_prob(sample), dist.entropy()
        assert value is not None  # with_value=True: the critic ran
        return self.actor.distribution.env_actions(sample), log_prob, entropy, value

    def sample_action(self, obs: Observation, action_mask: Any = None) -> np.ndarray:
        """Actions sampled from the policy (as rollouts sample them), for ``env.step``."""
        sample, _, _ = self._act(obs, action_mask, deterministic=False, with_value=False)
        return self.actor.distribution.env_actions(sample)

    def eval_action(
        self, obs: Observation, action_mask: Any = None, actor: Any = None
    ) -> np.ndarray:
        """The most likely action of each observation (the Gaussian mean for Box): of
        this agent's policy, or of ``actor`` when given (a network of its architecture,
        e.g. a cohort's stacked one)."""
        sample, _, _ = self._act(obs, action_mask, True, with_value=False, actor=actor)
        return self.actor.distribution.env_actions(sample)

    def act(
        self,
        view: Population[PPO],
        obs: Observation,
        action_mask: Any,
        state: HiddenState | None = None,
    ) -> Acted:
        """The agents of ``view`` acting in their training rollouts, each on its block of
        ``obs`` (its rows of ``action_mask`` alike, or None), from ``state`` (recurrent,
        an agent alone): one forward of the view's networks for every row, then every
        row's action drawn from its own agent's distribution in one draw of torch's
        global generator (which a turn seeds as the agent's alone, as the cohort's
        stacked), its log-probability and value. The observations are the rollout's:
        ``normalize`` keeps them for its statistics."""
        actor = view.net("actor")
        with torch.inference_mode():
            x = self._preprocess(obs, observe=True)
            dist, value, next_state = self._forward_x(
                actor, view.net("critic"), x, action_mask, state
            )
            sample = dist.sample()
            log_prob = dist.log_prob(sample)
        assert value is not None  # with_value: a rollout stores every step's value
        return Acted(actor.distribution.env_actions(sample), sample, log_prob, value, next_state)

    def values(
        self, view: Population[PPO], obs: Observation, state: HiddenState | None = None
    ) -> torch.Tensor:
        """``V`` of every agent of ``view`` on its block of ``obs``, from ``state``
        (recurrent, an agent alone)."""
        critic = view.net("critic")
        with torch.no_grad():
            x = self._preprocess(obs)
            if state is None:
                return critic.head(critic.encoder(x)).squeeze(-1)
            value = self._forward_x(view.net("actor"), critic, x, None, state)[1]
        assert value is not None
        return value

    # -- rollouts -------------------------------------------------------------------------
    @property
    def rollout_length(self) -> int:
        """Vector steps per rollout: ``learn_step`` environment steps, rounded up."""
        return -(-self.learn_step // self.num_envs)

    @property
    def use_gae(self) -> bool:
        """Whether advantages are GAE (``rollout_buffer_config.use_gae``)."""
        return bool(self.rollout_buffer_config.use_gae)

    @property
    def rollout_steps(self) -> int:
        """Environment steps one :meth:`collect_rollouts` call takes (all environments)."""
        return self.rollout_length * self.num_envs

    def reset_rollouts(self) -> None:
        """Forget the returns (and hidden states) of the episodes in flight: the
        environment was reset, so the next :meth:`collect_rollouts` starts new episodes
        everywhere."""
        self._episode_returns = None
        self._rollout_obs = None
        self._rollout_state = None
        if self.normalization is not None:
            self.normalization.restart_episodes()

    def _sequence_layout(self) -> tuple[int | None, int | None]:
        """``(seq_len, seq_stride)`` of the rollout buffer: None for a feed-forward agent;
        ``max_seq_len`` null means one sequence per environment and rollout."""
        if not self.recurrent:
            return None, None
        seq_len = self.max_seq_len or self.rollout_length
        return seq_len, SEQUENCE_STRIDES[self.bptt_sequence_type](seq_len)

    def _ensure_buffer(self) -> RolloutBuffer:
        """The rollout buffer, re-created when ``learn_step`` or ``num_envs`` changed (a
        mutation or a loaded checkpoint) and kept in step with the other settings."""
        buffer = self.rollout_buffer
        capacity = self.rollout_length
        seq_len, seq_stride = self._sequence_layout()
        if seq_len is not None and seq_stride is not None:  # both or neither (recurrent)
            seq_len, seq_stride = min(seq_len, capacity), min(seq_stride, seq_len, capacity)
        if (
            buffer is None
            or buffer.capacity != capacity
            or buffer.num_envs != self.num_envs
            or buffer.device != self.device
            or (buffer.seq_len, buffer.seq_stride) != (seq_len, seq_stride)
        ):
            buffer = RolloutBuffer(
                capacity,
                self.num_envs,
                self.observation_space,
                self.action_space,
                self.device,
                seq_len=seq_len,
                seq_stride=seq_stride,
            )
            self.rollout_buffer = buffer
        buffer.gamma = self.gamma
        buffer.gae_lambda = self.gae_lambda
        buffer.use_gae = self.use_gae
        return buffer

    def collect_rollouts(
        self, env: Any, obs: Observation, info: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any], list[float]]:
        """Fill the rollout buffer with ``ceil(learn_step / num_envs)`` steps of ``env`` (a
        vector env with same-step autoreset; ``num_envs`` becomes ``env.num_envs``),
        starting from ``obs``/``info``, and compute the advantages.

        The steps are those of :func:`~agilerl.components.on_policy.collect_rollout`, the
        collection every on-policy algorithm shares, with this agent's hooks
        (:class:`_RolloutCollector`); the advantages are the rollout buffer's
        (:func:`~agilerl.components.on_policy.advantages_and_returns`). A truncated (not
        terminated) episode's last reward gets ``gamma * V(final obs)`` added
        (:func:`~agilerl.components.on_policy.bootstrap_time_limits`): the time limit cut
        the episode, not the task. Returns the observation and info to continue from
        and the returns of the episodes that ended in this rollout. An episode running
        across rollouts counts once, when it ends, provided the next call passes the
        observation this one returned; :meth:`reset_rollouts`, or any other ``obs`` (e.g.
        after ``env.reset()``), starts every episode return (and a recurrent agent's
        hidden state) from zero. Observations are stored after
        ``env.step``, so the env must return fresh arrays (gymnasium's default
        ``copy=True``). The ``steps`` and ``scores`` counters are left to the training loop.
        """
        info = {} if info is None else info
        self.num_envs = int(env.num_envs)
        buffer = self._ensure_buffer()
        buffer.reset()
        n = self.num_envs
        continued = (
            self._episode_returns is not None
            and len(self._episode_returns) == n
            and obs is self._rollout_obs
        )
        if not continued or self._episode_returns is None:  # (continued: it is not None)
            self._episode_returns = np.zeros(n)
        state = self._state_for(self._rollout_state if continued else None, n)
        collector = _RolloutCollector(self, buffer, state, self._episode_returns)
        obs, next_info = on_policy.collect_rollout(env, collector, obs, info, buffer.capacity)
        state = collector.state
        buffer.compute_returns_and_advantages(self.values(collector.view, obs, state))
        self._rollout_obs = obs
        self._rollout_state = state
        return obs, next_info, collector.completed

    def _final_values(
        self,
        view: Population[PPO],
        info: dict[str, Any],
        envs: np.ndarray,
        state: HiddenState | None = None,
    ) -> np.ndarray:
        """``V`` of the final observations of environments ``envs`` (same-step autoreset
        puts them in ``info["final_obs"]``), from their ``state`` after the last step."""
        final, flags = info.get("final_obs"), info.get("_final_obs")
        if final is None or flags is None or not np.all(np.asarray(flags)[envs]):
            raise ValueError(
                "a truncated episode's final observation is missing from info['final_obs']: "
                "collect_rollouts needs a vector env with autoreset_mode=SAME_STEP"
            )
        batch = stack_tree([final[i] for i in envs])
        return self.values(view, batch, state).cpu().numpy()

    # -- learning -------------------------------------------------------------------------
    def _forward_sequences(
        self, batch: RolloutBatch, actor: Any, critic: Any
    ) -> tuple[Any, torch.Tensor]:
        """Distribution and values of the valid steps of a sequence minibatch through
        ``actor`` and ``critic``: each sequence runs through the LSTMs from its stored
        state, resetting where an episode starts inside it, and the gradient flows back
        through the whole sequence."""
        if batch.valid is None:  # a sequence minibatch (recurrent) always carries it
            raise ValueError("a sequence minibatch without its valid-step mask")
        count, length = batch.valid.shape
        flat = map_tree(lambda v: v.reshape(count * length, *v.shape[2:]), batch.obs)
        x = self._preprocess(flat).reshape(count, length, -1)
        valid = batch.valid.reshape(-1)
        state = map_tree(lambda h: h.transpose(0, 1).contiguous(), batch.hidden)

        def encode(name: str, net: EvolvableNetwork) -> torch.Tensor:
            latent, _ = _lstm(net).forward_sequence(x, state[name], batch.resets)
            return latent.reshape(count * length, -1)[valid]

        latent = encode("actor", actor)
        dist = actor.distribution(actor.head(latent), batch.action_masks)
        if critic.encoder is not actor.encoder:
            latent = encode("critic", critic)
        return dist, critic.head(latent).squeeze(-1)

    def _minibatch_loss(
        self, view: Population[PPO], batch: RolloutBatch
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent of ``view``'s PPO loss of a minibatch (class docstring) and,
        detached, its :data:`METRICS`: an agent alone's loss and ``(6,)``; a stacked
        view's ``(P,)`` and ``(6, P)``, agent ``p``'s rows (the ``p``-th block of the
        minibatch) reduced with its own ``clip_coef``, ``ent_coef`` and ``vf_coef``."""
        actor, critic = view.net("actor"), view.net("critic")
        if batch.hidden is None:
            x = self._preprocess(batch.obs)
            dist, value, _ = self._forward_x(actor, critic, x, batch.action_masks, None)
        else:
            dist, value = self._forward_sequences(batch, actor, critic)
        assert value is not None
        log_prob, entropy = dist.log_prob(batch.actions), dist.entropy()
        coefficients = [view.value(name) for name in ("clip_coef", "ent_coef", "vf_coef")]
        if view.stacked:
            return joined_ppo_loss(log_prob, entropy, value, batch, view.count, *coefficients)
        return clipped_ppo_loss(log_prob, entropy, value, batch, *coefficients)

    def _epoch(
        self,
        view: Population[PPO],
        rollout: RolloutBuffer,
        generators: Sequence[torch.Generator | None] | None,
    ) -> Callable[[np.ndarray], Iterator[RolloutBatch]]:
        """One epoch's minibatches of ``rollout`` for the agents still learning: a
        recurrent agent's whole sequences (it learns alone); else each agent's
        ``batch_size`` samples of its own (its block of the rollout's columns) in an
        order drawn from its generator (None: torch's global one, an agent alone)."""
        if self.recurrent:
            return lambda active: rollout.sequence_minibatches(self.batch_size)
        every = rollout.samples()
        where = agent_samples(rollout.num_envs, len(rollout), view.count)
        draws = [None] * view.count if generators is None else list(generators)

        def epoch(active: np.ndarray) -> Iterator[RolloutBatch]:
            for index in joined_minibatches(where, self.batch_size, draws, active):
                yield every.rows(index.to(rollout.device))

        return epoch

    def update(
        self,
        view: Population[PPO],
        rollout: RolloutBuffer,
        generators: Sequence[torch.Generator] | None = None,
    ) -> list[dict[str, float] | None]:
        """The PPO update of every agent of ``view`` on its rollout (class docstring), a
        recurrent agent's on minibatches of whole sequences (module docstring):
        ``rollout`` holds agent ``p``'s environments as the ``p``-th block of its
        columns, and each agent's minibatch orders are drawn from its own of
        ``generators`` (None: torch's global generator, an agent alone). Each agent
        steps on its own loss with its own ``max_grad_norm``, for its own
        ``update_epochs``, and its ``target_kl`` stops it alone
        (:func:`learning_epochs`). Returns each agent's :data:`LEARN_METRICS`."""

        def minimise(losses: torch.Tensor, step: np.ndarray) -> None:
            live = None if step.all() else view.live_mask(step)
            total = stepping_total(losses, live)
            view.minimise("optimizer", total, live, view.value("max_grad_norm"))

        figures = learning_epochs(
            [agent.update_epochs for agent in view.agents],
            [agent.target_kl for agent in view.agents],
            self._epoch(view, rollout, generators),
            lambda batch: self._minibatch_loss(view, batch),
            minimise,
        )
        for agent in view.agents:
            if agent.normalization is not None:
                agent.normalization.absorb()  # the next rollout is normalised with this one in
        return [*figures.metrics()]

    def learn(self) -> dict[str, float]:
        """PPO updates on the collected rollout (see the class docstring): :meth:`update`
        of this agent alone; a recurrent agent learns from minibatches of whole
        sequences (module docstring).

        Returns the means over the minibatches evaluated of ``loss``, ``policy_loss``,
        ``value_loss``, ``entropy``, ``approx_kl`` (Schulman's ``(r - 1) - log r``
        estimator) and ``clip_fraction``, plus ``updates`` (optimiser steps taken) and
        ``early_stop`` (1.0 when ``target_kl`` ended the epochs). The minibatch whose KL
        exceeded ``target_kl`` is measured but not stepped on.
        """
        buffer = self.rollout_buffer
        if buffer is None or not buffer.ready:
            raise RuntimeError("learn() needs a rollout: call collect_rollouts() first")
        return learned(self.update(Population.of(self), buffer))

    def extra_state(self) -> dict[str, Any]:
        if self.normalization is None:
            return {}
        return {"normalization": self.normalization.state_dict()}

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        if self.normalization is None:
            super().load_extra_state(state, where)
            return
        checkpoints.require_keys(state, ("normalization",), where, "extra state of PPO")
        self.normalization.load_state_dict(
            state["normalization"], checkpoints.join(where, "normalization")
        )


class Acted(NamedTuple):
    """A rollout step's acting (:meth:`PPO.act`), every row of the view's batch."""

    actions: np.ndarray  #: for ``env.step``
    sample: torch.Tensor  #: the distribution's samples, as the rollout stores them
    log_prob: torch.Tensor
    value: torch.Tensor
    state: HiddenState | None  #: the hidden state after the step (None: feed-forward)


class _RolloutCollector(on_policy.RolloutCollector):
    """PPO's hooks of :func:`~agilerl.components.on_policy.collect_rollout`: act from the
    carried hidden state, store into the rollout buffer, count episode returns and reset
    the state of the environments whose episode ended."""

    def __init__(
        self,
        agent: PPO,
        buffer: RolloutBuffer,
        state: HiddenState | None,
        episode_returns: np.ndarray,
    ) -> None:
        self.agent = agent
        #: The agent as the view of one it acts and values through.
        self.view: Population[PPO] = Population.of(agent)
        self.buffer = buffer
        self.gamma = agent.gamma
        self.num_envs = buffer.num_envs
        #: The hidden state the next step acts on (None for a feed-forward agent).
        self.state = state
        self.episode_returns = episode_returns
        #: The returns of the episodes that ended in this rollout.
        self.completed: list[float] = []
        self._acted: tuple[Any, ...] = ()

    def act(self, obs: Observation, info: Any) -> np.ndarray:
        mask = action_mask_from_info(info)
        acted = self.agent.act(self.view, obs, mask, self.state)
        self._acted = (acted.sample, acted.log_prob, acted.value, mask, acted.state)
        return acted.actions

    def outcome(
        self, reward: Any, terminated: Any, truncated: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.num_envs
        return (
            np.array(reward, dtype=np.float32).reshape(n),
            np.asarray(terminated, dtype=bool).reshape(n),
            np.asarray(truncated, dtype=bool).reshape(n),
        )

    def learning_rewards(self, reward: Any, done: Any) -> Any:
        normalization = self.agent.normalization
        if normalization is None:
            return reward
        return normalization.scale_rewards(reward, done, self.agent.gamma)

    def final_values(self, next_info: Any, cut: np.ndarray) -> np.ndarray:
        envs = np.flatnonzero(cut)
        next_state = self._acted[-1]
        after = None if next_state is None else _rows(next_state, envs)
        values = np.zeros(self.num_envs, dtype=np.float32)
        values[envs] = self.agent._final_values(self.view, next_info, envs, after)
        return values

    def store(self, step: on_policy.VectorStep) -> None:
        sample, log_prob, value, mask, next_state = self._acted
        # A buffer with seq_len keeps the state of a step where a sequence starts, laid
        # out environment first.
        stored = None if self.state is None else map_tree(lambda x: x.transpose(0, 1), self.state)
        self.buffer.add(step.obs, sample, step.reward, step.done, value, log_prob, mask, stored)
        returns = self.episode_returns
        returns += step.env_reward
        for i in np.flatnonzero(step.done):
            self.completed.append(float(returns[i]))
            returns[i] = 0.0
        self.state = _reset_rows(next_state, step.done)


def clipped_ppo_loss(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    batch: Any,
    clip_coef: float | torch.Tensor,
    ent_coef: float | torch.Tensor,
    vf_coef: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The PPO loss of one minibatch (module docstring) and, detached, :data:`METRICS`.

    ``log_prob``, ``entropy`` and ``value`` are the current networks' for the minibatch;
    ``batch`` carries what the rollout stored: ``log_probs``, ``advantages`` (normalised
    here, within the minibatch), ``values`` and ``returns``. Shared by PPO and IPPO.

    Every reduction runs over the last dimension, so the tensors may carry leading ones:
    a cohort's minibatches ``(P, B)``, one row per agent, with coefficients ``(P, 1)``,
    give each agent's loss ``(P,)`` and metrics ``(6, P)``."""
    log_ratio = log_prob - batch.log_probs
    ratio = log_ratio.exp()
    advantages = batch.advantages
    if advantages.shape[-1] > 1:
        advantages = (advantages - advantages.mean(-1, keepdim=True)) / (
            advantages.std(-1, keepdim=True) + 1e-8
        )
    # clip_coef is a float, or a cohort's (P, 1) tensor: torch.clamp takes either, but its
    # stubs' overloads take numbers or tensors and pyright does not split the union.
    clipped = torch.clamp(ratio, 1.0 - clip_coef, 1.0 + clip_coef)  # pyright: ignore[reportCallIssue, reportArgumentType]
    policy_loss = -torch.min(advantages * ratio, advantages * clipped).mean(-1)
    change = torch.clamp(value - batch.values, -clip_coef, clip_coef)  # pyright: ignore[reportCallIssue, reportArgumentType]
    value_clipped = batch.values + change
    value_error = torch.max((value - batch.returns) ** 2, (value_clipped - batch.returns) ** 2)
    value_loss = 0.5 * value_error.mean(-1)
    entropy = entropy.mean(-1)
    loss = policy_loss - _flat(ent_coef) * entropy + _flat(vf_coef) * value_loss
    with torch.no_grad():
        approx_kl = ((ratio - 1.0) - log_ratio).mean(-1)
        clip_fraction = ((ratio - 1.0).abs() > clip_coef).float().mean(-1)
        stats = torch.stack([loss, policy_loss, value_loss, entropy, approx_kl, clip_fraction])
    return loss, stats


def joined_ppo_loss(
    log_prob: torch.Tensor,
    entropy: torch.Tensor,
    value: torch.Tensor,
    batch: Any,
    count: int,
    clip_coef: float | torch.Tensor,
    ent_coef: float | torch.Tensor,
    vf_coef: float | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each of ``count`` agents' PPO loss ``(P,)`` and metrics ``(len(METRICS), P)`` of a
    joined minibatch (agent ``p``'s rows the ``p``-th block of ``batch``, a dataclass
    with ``log_probs``, ``advantages``, ``values`` and ``returns``, and of ``log_prob``,
    ``entropy`` and ``value``): :func:`clipped_ppo_loss` reducing each agent's rows with
    its own coefficients (``(P,)`` or ``(P, 1)``)."""

    def agent_rows(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(count, -1)

    def per_agent(coef: float | torch.Tensor) -> float | torch.Tensor:
        return coef.reshape(count, 1) if isinstance(coef, torch.Tensor) else coef

    rows = replace(
        batch,
        log_probs=agent_rows(batch.log_probs),
        advantages=agent_rows(batch.advantages),
        values=agent_rows(batch.values),
        returns=agent_rows(batch.returns),
    )
    return clipped_ppo_loss(
        agent_rows(log_prob), agent_rows(entropy), agent_rows(value), rows,
        per_agent(clip_coef), per_agent(ent_coef), per_agent(vf_coef),
    )  # fmt: skip


def stepping_total(losses: torch.Tensor, step: torch.Tensor | None) -> torch.Tensor:
    """The sum of the losses of the agents that ``step`` (bool, one per agent; None:
    every agent): what one optimiser step minimises (an agent's stacked parameters meet
    only its rows, so each agent's gradient is its own loss's; an agent alone's loss
    summed is its loss, its gradient to the bit)."""
    if step is None:
        return losses.sum()
    return (losses * step.reshape(losses.shape)).sum()


#: A minibatch of the epochs (:func:`learning_epochs`): a rollout's, a team's samples'.
Minibatch = TypeVar("Minibatch")


@dataclass
class EpochFigures:
    """What P agents' epochs did (:func:`learning_epochs`), per agent."""

    #: :data:`METRICS` summed over the minibatches each agent evaluated: ``(6,)`` of an
    #: agent alone, ``(6, P)`` of a stacked view (as its losses' metrics come).
    totals: torch.Tensor
    evaluated: np.ndarray  # (P,) minibatches evaluated
    updates: np.ndarray  # (P,) optimiser steps taken
    stopped: np.ndarray  # (P,) bool: its target_kl ended its epochs

    def means(self) -> torch.Tensor:
        """Each agent's mean of every figure of :data:`METRICS` over the minibatches it
        evaluated, shaped as :attr:`totals`. The counts take the totals' agent shape: an
        agent alone's is a 0-dim tensor, which does not promote, so it divides in
        float32 as its ``learn`` always has; a stacked view's ``(P,)`` float64 counts
        promote, so a cohort's means are float64 as they always were."""
        counts = torch.as_tensor(np.maximum(self.evaluated, 1), device=self.totals.device)
        return self.totals / counts.reshape(self.totals.shape[1:])

    def metrics(self) -> list[dict[str, float]]:
        """Each agent's :data:`LEARN_METRICS`."""
        means = self.means().reshape(len(METRICS), -1).T.tolist()
        return [
            {
                **dict(zip(METRICS, row, strict=True)),
                "updates": float(self.updates[p]),
                "early_stop": float(self.stopped[p]),
            }
            for p, row in enumerate(means)
        ]


def learning_epochs(
    update_epochs: Sequence[int],
    target_kl: Sequence[float | None],
    epoch: Callable[[np.ndarray], Iterator[Minibatch]],
    loss: Callable[[Minibatch], tuple[torch.Tensor, torch.Tensor]],
    minimise: Callable[[torch.Tensor, np.ndarray], None],
) -> EpochFigures:
    """The epochs of P agents' PPO updates, every agent's minibatch ``k`` learnt together.

    ``epoch(active)`` gives one epoch's minibatches (each agent of the bool row
    ``active`` draws its order, as its own ``learn`` draws one per epoch it runs);
    ``loss(minibatch)`` each agent's loss and :data:`METRICS` (:meth:`PPO.
    _minibatch_loss`); ``minimise(losses, step)`` one optimiser step of the agents of
    ``step``. ``target_kl`` stops each agent on its own: the minibatch whose KL exceeded
    it is measured but not stepped on, and the agent is masked out of the steps after
    it (weights and Adam moments untouched); an agent of fewer ``update_epochs`` is
    masked out the same way once its epochs are done."""
    count = len(update_epochs)
    epochs_left = np.asarray(update_epochs)
    stopped = np.zeros(count, dtype=bool)
    evaluated = np.zeros(count)
    updates = np.zeros(count)
    totals: torch.Tensor | None = None
    kl_index = METRICS.index("approx_kl")
    watch_kl = any(limit is not None for limit in target_kl)
    limits = np.array([np.inf if limit is None else limit for limit in target_kl])
    for number in range(int(epochs_left.max())):
        active = ~stopped & (number < epochs_left)
        if not active.any():
            break
        for minibatch in epoch(active):
            if not active.any():
                break
            losses, stats = loss(minibatch)
            if totals is None:
                totals = torch.zeros_like(stats)
            if active.all():
                totals += stats
            else:  # the figures of the agents that have stopped are not counted
                totals += stats * torch.as_tensor(active, device=stats.device)
            evaluated += active
            step = active.copy()
            if watch_kl:
                # One read of every agent's KL (.cpu() waits for the device, so only when
                # some agent has a target_kl) decides which of them step.
                exceeded = active & (stats[kl_index].reshape(-1).cpu().numpy() > limits)
                stopped |= exceeded
                step &= ~exceeded
            if step.any():
                minimise(losses, step)
                updates += step
            active = step
    assert totals is not None  # every agent runs at least one epoch
    return EpochFigures(totals, evaluated, updates, stopped)


def agent_samples(columns: int, samples: int, count: int) -> torch.Tensor:
    """``where[p, i]``: the sample of a rollout of ``columns`` environments and
    ``samples`` samples (numbered step by step) that is agent ``p``'s sample ``i`` as its
    own rollout numbers it, agent ``p``'s environments being the ``p``-th block of the
    columns; ``(count, samples // count)`` (one agent: every sample in order)."""
    n = columns // count
    own = torch.arange(samples // count)
    first = (torch.arange(count) * n).unsqueeze(1)
    return (own // n * n * count + own % n).unsqueeze(0) + first


def joined_minibatches(
    where: torch.Tensor,
    batch_size: int,
    generators: Sequence[torch.Generator | None],
    active: np.ndarray,
) -> Iterator[torch.Tensor]:
    """One epoch of P agents' minibatches as indices of their joined samples: each agent
    in ``active`` draws its own order of its samples ``where[p]`` from its generator
    (None: torch's global one); minibatch ``k`` holds every agent's ``k``-th
    ``batch_size`` samples, agent ``p``'s the ``p``-th block (an agent not active keeps
    its samples in order, unused)."""
    size = where.shape[1]
    unused = torch.arange(size)
    orders = torch.stack(
        [
            torch.randperm(size, generator=g) if active[p] else unused
            for p, g in enumerate(generators)
        ]
    )
    for start in range(0, size, batch_size):
        yield where.gather(1, orders[:, start : start + batch_size]).reshape(-1)


def _flat(coef: float | torch.Tensor) -> float | torch.Tensor:
    """A per-row coefficient ``(P, 1)`` as ``(P,)``, to scale per-row reductions."""
    return coef.reshape(-1) if isinstance(coef, torch.Tensor) else coef


def _lstm(net: EvolvableNetwork) -> EvolvableLSTM:
    """The LSTM encoder of a recurrent agent's network (``PPO.__init__`` refuses a
    recurrent agent with any other encoder); typed as such for its state methods."""
    return cast(EvolvableLSTM, net.encoder)


def _batch_of(x: Any) -> int:
    """Batch size of preprocessed observations (the first leaf's leading dimension)."""
    return int(tree_leaves(x)[0].shape[0])
