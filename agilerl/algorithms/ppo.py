"""Proximal Policy Optimisation (Schulman et al., 2017) with a clipped surrogate objective.

An actor (:class:`StochasticActor`) and a critic (:class:`ValueNetwork`) trained by one Adam
optimiser on rollouts of a vectorised environment (:meth:`PPO.collect_rollouts`, then
:meth:`PPO.learn`). With ``share_encoders`` (the default) the critic uses the actor's
encoder module itself, so the encoder runs once per forward pass for both heads and learns
from the policy and the value losses together.

Loss per minibatch (advantages normalised within the minibatch)::

    ratio = exp(log_prob - old_log_prob)
    policy_loss = -mean(min(A * ratio, A * clip(ratio, 1 - clip_coef, 1 + clip_coef)))
    value_loss = 0.5 * mean(max((V - R)^2, (V_clipped - R)^2)),
        V_clipped = V_old + clip(V - V_old, -clip_coef, clip_coef)
    loss = policy_loss - ent_coef * entropy + vf_coef * value_loss

The value is clipped around the rollout's values with ``clip_coef``, as AgileRL does.

Recurrent PPO is not implemented: ``recurrent=True`` is refused, and ``max_seq_len`` and
``bptt_sequence_type`` are only kept (and checkpointed) as the spec's values.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch.distributions import Bernoulli, Normal

from agilerl._generated.ppo_schema import RolloutBufferConfig
from agilerl.algorithms.base import RLAlgorithm, action_mask_from_info
from agilerl.components.rollout_buffer import RolloutBatch, RolloutBuffer
from agilerl.models.networks import StochasticActorSpec, ValueNetworkSpec
from agilerl.modules.base import respec
from agilerl.networks.base import preprocess
from agilerl.networks.networks import StochasticActor, ValueNetwork

#: Logit given to masked-out actions: their probability underflows to exactly zero while
#: the entropy stays finite (``-inf`` would make ``0 * log 0`` a NaN).
MASKED_LOGIT = -1e8

#: What :meth:`PPO.learn` reports (``RLAlgorithm.learn_metrics``); the first six are
#: means over the minibatches evaluated, in the order :meth:`PPO._minibatch_loss` stacks them.
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


class _Categoricals:
    """Independent categorical distributions over consecutive groups of ``logits`` columns
    (one group for Discrete, one per sub-action for MultiDiscrete), computed with one
    ``log_softmax`` per group and no argument validation: a rollout step samples a few
    actions, and ``torch.distributions`` would cost more than the network."""

    def __init__(self, logits: torch.Tensor, sizes: list[int]) -> None:
        parts = logits.split(sizes, dim=-1) if len(sizes) > 1 else (logits,)
        self.log_p = [part.log_softmax(dim=-1) for part in parts]

    def sample(self, deterministic: bool) -> torch.Tensor:
        """``(batch, groups)`` indices: sampled, or the most likely ones."""
        if deterministic:
            picks = [lp.argmax(dim=-1, keepdim=True) for lp in self.log_p]
        else:
            # Gumbel-max: argmax(log p + G), G = -log(-log U), is an exact sample and a
            # third of the cost of torch.multinomial on a handful of rows.
            picks = [
                (lp - (-torch.rand_like(lp).log()).log()).argmax(dim=-1, keepdim=True)
                for lp in self.log_p
            ]
        return picks[0] if len(picks) == 1 else torch.cat(picks, dim=-1)

    def log_prob(self, index: torch.Tensor) -> torch.Tensor:
        """Summed log-probability of ``(batch, groups)`` indices."""
        total = self.log_p[0].gather(-1, index[:, :1])
        for i, lp in enumerate(self.log_p[1:], start=1):
            total = total + lp.gather(-1, index[:, i : i + 1])
        return total.squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """Summed entropy (a masked action adds ``0 * MASKED_LOGIT = 0``)."""
        total = -(self.log_p[0].exp() * self.log_p[0]).sum(dim=-1)
        for lp in self.log_p[1:]:
            total = total - (lp.exp() * lp).sum(dim=-1)
        return total


class _ActionDistribution:
    """The actor's action distribution built from its head output, so that one encoder
    pass can serve the actor and the critic; applies action masks (Discrete and
    MultiDiscrete actions). Mirrors :class:`StochasticActor` (same distributions, layout
    and squashing), except that a Box action is kept as the raw Gaussian sample ``u``:
    the environment gets it clipped or squashed (:meth:`PPO._env_action`), and its
    log-probability is evaluated exactly, without inverting a squash."""

    def __init__(self, actor: StochasticActor, out: torch.Tensor, mask: Any = None) -> None:
        self.actor = actor
        self.kind = actor.kind
        if mask is not None and self.kind not in ("discrete", "multidiscrete"):
            raise ValueError(
                f"action masks apply to Discrete and MultiDiscrete actions, not {self.kind}"
            )
        if mask is not None:
            mask = torch.as_tensor(mask, device=out.device).reshape(out.shape).bool()
            out = out.masked_fill(~mask, MASKED_LOGIT)
        if self.kind == "discrete":
            self.categoricals = _Categoricals(out, [out.shape[-1]])
        elif self.kind == "multidiscrete":
            self.categoricals = _Categoricals(out, actor.nvec)
        elif self.kind == "multibinary":
            self.bernoulli = Bernoulli(logits=out, validate_args=False)
        else:
            log_std = actor.log_std.clamp(*actor._LOG_STD_BOUNDS)
            self.normal = Normal(out, log_std.exp().expand_as(out), validate_args=False)

    def _box_log_prob(self, u: torch.Tensor) -> torch.Tensor:
        log_prob = self.normal.log_prob(u).sum(dim=-1)
        if self.actor.spec.squash_output:
            log_prob = log_prob - self.actor._squash(u)[1]
        return log_prob

    def act(self, deterministic: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(action, log_prob)``; the mode when ``deterministic``."""
        if self.kind in ("discrete", "multidiscrete"):
            index = self.categoricals.sample(deterministic)
            log_prob = self.categoricals.log_prob(index)
            if self.kind == "discrete":
                return index[:, 0], log_prob
            action = index + self.actor.action_start
            return action.reshape(-1, *self.actor.action_space.shape), log_prob
        if self.kind == "multibinary":
            dist = self.bernoulli
            bits = (dist.logits > 0).to(dist.logits) if deterministic else dist.sample()
            log_prob = dist.log_prob(bits).sum(dim=-1)
            return bits.reshape(-1, *self.actor.action_space.shape), log_prob
        u = self.normal.mean if deterministic else self.normal.sample()
        return u.reshape(-1, *self.actor.action_space.shape), self._box_log_prob(u)

    def entropy(self) -> torch.Tensor:
        """``(batch,)`` entropy (of the Gaussian before any squash, as the actor's)."""
        if self.kind in ("discrete", "multidiscrete"):
            return self.categoricals.entropy()
        if self.kind == "multibinary":
            return self.bernoulli.entropy().sum(dim=-1)
        return self.normal.entropy().sum(dim=-1)

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """``(batch,)`` log-probability of actions as :meth:`act` returned them."""
        if self.kind == "discrete":
            return self.categoricals.log_prob(action.reshape(-1, 1).long())
        if self.kind == "multidiscrete":
            index = action.reshape(action.shape[0], -1).long() - self.actor.action_start
            return self.categoricals.log_prob(index)
        if self.kind == "multibinary":
            dist = self.bernoulli
            return dist.log_prob(action.to(dist.logits).reshape(dist.logits.shape)).sum(dim=-1)
        return self._box_log_prob(action.to(self.normal.mean).reshape(self.normal.mean.shape))


def _stack_obs(items: list[Any], space: spaces.Space) -> Any:
    """Single observations (e.g. from ``info["final_obs"]``) -> one batch."""
    if isinstance(space, spaces.Dict):
        return {k: _stack_obs([o[k] for o in items], sub) for k, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(_stack_obs([o[i] for o in items], s) for i, s in enumerate(space.spaces))
    return np.stack([np.asarray(o) for o in items])


class PPO(RLAlgorithm):
    """PPO for Discrete, MultiDiscrete, MultiBinary and Box actions (module docstring).

    ``learn_step`` environment steps (rounded up to whole vector steps) make one rollout;
    :meth:`learn` then runs ``update_epochs`` passes over it in minibatches of
    ``batch_size`` and stops early once the approximate KL divergence of a minibatch
    exceeds ``target_kl``. ``max_grad_norm`` 0 disables gradient clipping.
    """

    init_args = (
        "batch_size",
        "lr",
        "learn_step",
        "gamma",
        "num_envs",
        "gae_lambda",
        "action_std_init",
        "clip_coef",
        "ent_coef",
        "vf_coef",
        "max_grad_norm",
        "target_kl",
        "update_epochs",
        "rollout_buffer_config",
        "recurrent",
        "max_seq_len",
        "share_encoders",
        "bptt_sequence_type",
        "net_config",
    )
    default_mutable = ("lr", "batch_size", "learn_step")
    eval_networks = ("actor", "critic")
    optimizer_specs = {"optimizer": (("actor", "critic"), "lr")}
    learn_metrics = LEARN_METRICS
    main_loss = "value_loss"

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        *,
        batch_size: int = 128,
        lr: float = 1e-4,
        learn_step: int = 2048,
        gamma: float = 0.99,
        num_envs: int = 1,
        gae_lambda: float = 0.95,
        action_std_init: float = 0.6,
        clip_coef: float = 0.2,
        ent_coef: float = 0.01,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        target_kl: float | None = None,
        update_epochs: int = 4,
        rollout_buffer_config: Any = None,
        recurrent: bool = False,
        max_seq_len: int | None = 32,
        share_encoders: bool = True,
        bptt_sequence_type: str = "chunked",
        hp_config: Any = None,
        net_config: Any = None,
        device: str | torch.device = "cpu",
        accelerator: Any = None,
        seed: int | None = None,
    ) -> None:
        if recurrent:
            raise NotImplementedError(
                "recurrent PPO (an LSTM policy trained with backpropagation through time) is "
                "not implemented in this engine yet; set recurrent: false"
            )
        super().__init__(
            observation_space,
            action_space,
            index,
            net_config=net_config,
            device=device,
            accelerator=accelerator,
            seed=seed,
        )
        for name, value in (
            ("batch_size", batch_size),
            ("learn_step", learn_step),
            ("num_envs", num_envs),
            ("update_epochs", update_epochs),
        ):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if target_kl is not None and target_kl < 0:
            raise ValueError(f"target_kl must be non-negative or None, got {target_kl!r}")
        self.batch_size = int(batch_size)
        self.lr = float(lr)
        self.learn_step = int(learn_step)
        self.gamma = float(gamma)
        self.num_envs = int(num_envs)
        self.gae_lambda = float(gae_lambda)
        self.action_std_init = float(action_std_init)
        self.clip_coef = float(clip_coef)
        self.ent_coef = float(ent_coef)
        self.vf_coef = float(vf_coef)
        self.max_grad_norm = float(max_grad_norm)
        self.target_kl = None if target_kl is None else float(target_kl)
        self.update_epochs = int(update_epochs)
        if isinstance(rollout_buffer_config, RolloutBufferConfig):
            rollout_buffer_config = rollout_buffer_config.model_dump()
        # Kept as the spec model: hyperparameters() dumps it, a checkpoint validates it back.
        self.rollout_buffer_config = RolloutBufferConfig.model_validate(rollout_buffer_config or {})
        self.recurrent = False
        self.max_seq_len = max_seq_len
        self.share_encoders = bool(share_encoders)
        self.bptt_sequence_type = bptt_sequence_type

        self.actor = StochasticActor(
            observation_space, action_space, self.network_spec(StochasticActorSpec)
        ).to(self.device)
        self.critic = ValueNetwork(observation_space, None, self.network_spec(ValueNetworkSpec)).to(
            self.device
        )
        if self.actor.kind == "box" and self.action_std_init > 0:
            with torch.no_grad():
                self.actor.log_std.fill_(math.log(self.action_std_init))

        self.rollout_buffer: RolloutBuffer | None = None
        # Per-environment return of the episodes in progress, carried from one rollout to
        # the next together with the observation they belong to.
        self._episode_returns: np.ndarray | None = None
        self._rollout_obs: Any = None
        self.finish_init(hp_config)

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

    # -- acting ---------------------------------------------------------------------------
    def _preprocess(self, obs: Any) -> Any:
        # The module-level function with the agent's device: a network's own preprocess
        # looks its device up by walking its parameters, once per call (per env step here).
        return preprocess(obs, self.observation_space, self.device)

    def _forward(self, obs: Any, mask: Any = None) -> tuple[_ActionDistribution, torch.Tensor]:
        """Action distribution and value ``(batch,)`` of a batch of observations; the
        observations are preprocessed once and a shared encoder runs once."""
        x = self._preprocess(obs)
        latent = self.actor.encoder(x)
        dist = _ActionDistribution(self.actor, self.actor.head(latent), mask)
        if self.critic.encoder is not self.actor.encoder:
            latent = self.critic.encoder(x)
        return dist, self.critic.head(latent).squeeze(-1)

    def _env_action(self, action: torch.Tensor) -> np.ndarray:
        """An action tensor from :class:`_ActionDistribution` as the environment takes it:
        Box samples squashed or clipped into the bounds, MultiBinary bits as integers."""
        kind = self.actor.kind
        if kind == "box" and self.actor.spec.squash_output:
            action = self.actor._squash(action.reshape(action.shape[0], -1))[0]
            return action.reshape(-1, *self.action_space.shape).cpu().numpy()
        out = action.cpu().numpy()
        if kind == "box":
            return np.clip(out, self.action_space.low, self.action_space.high)
        if kind == "multibinary":
            return out.astype(self.action_space.dtype)
        return out

    def get_action(
        self, obs: Any, action_mask: Any = None
    ) -> tuple[np.ndarray, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample actions for a batch of observations: ``(action for env.step, log_prob,
        entropy, value)``, the last three of shape ``(batch,)``. ``action_mask`` (Discrete
        and MultiDiscrete actions) marks allowed actions with 1/True; for a Box space the
        log-probability is that of the unclipped sample."""
        with torch.no_grad():
            dist, value = self._forward(obs, action_mask)
            action, log_prob = dist.act(deterministic=False)
        return self._env_action(action), log_prob, dist.entropy(), value

    def sample_action(self, obs: Any, action_mask: Any = None) -> np.ndarray:
        """Actions sampled from the policy (as rollouts sample them), for ``env.step``."""
        return self.get_action(obs, action_mask)[0]

    def eval_action(self, obs: Any, action_mask: Any = None) -> np.ndarray:
        """The most likely action of each observation (the Gaussian mean for Box)."""
        with torch.no_grad():
            x = self._preprocess(obs)
            out = self.actor.head(self.actor.encoder(x))
            action, _ = _ActionDistribution(self.actor, out, action_mask).act(True)
        return self._env_action(action)

    def _value(self, obs: Any) -> torch.Tensor:
        with torch.no_grad():
            return self.critic.head(self.critic.encoder(self._preprocess(obs))).squeeze(-1)

    # -- rollouts -------------------------------------------------------------------------
    @property
    def rollout_length(self) -> int:
        """Vector steps per rollout: ``learn_step`` environment steps, rounded up."""
        return -(-self.learn_step // self.num_envs)

    @property
    def rollout_steps(self) -> int:
        """Environment steps one :meth:`collect_rollouts` call takes (all environments)."""
        return self.rollout_length * self.num_envs

    def reset_rollouts(self) -> None:
        """Forget the returns of the episodes in flight: the environment was reset, so the
        next :meth:`collect_rollouts` starts new episodes everywhere."""
        self._episode_returns = None
        self._rollout_obs = None

    def _ensure_buffer(self) -> RolloutBuffer:
        """The rollout buffer, re-created when ``learn_step`` or ``num_envs`` changed (a
        mutation or a loaded checkpoint) and kept in step with the other settings."""
        buffer = self.rollout_buffer
        capacity = self.rollout_length
        if (
            buffer is None
            or buffer.capacity != capacity
            or buffer.num_envs != self.num_envs
            or buffer.device != self.device
        ):
            buffer = RolloutBuffer(
                capacity, self.num_envs, self.observation_space, self.action_space, self.device
            )
            self.rollout_buffer = buffer
        buffer.gamma = self.gamma
        buffer.gae_lambda = self.gae_lambda
        buffer.use_gae = self.rollout_buffer_config.use_gae
        return buffer

    def collect_rollouts(
        self, env: Any, obs: Any, info: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any], list[float]]:
        """Fill the rollout buffer with ``ceil(learn_step / num_envs)`` steps of ``env`` (a
        vector env with same-step autoreset; ``num_envs`` becomes ``env.num_envs``),
        starting from ``obs``/``info``, and compute the advantages.

        A truncated (not terminated) episode's last reward gets ``gamma * V(final obs)``
        added: the time limit cut the episode, not the task. Returns the observation and
        info to continue from and the returns of the episodes that ended in this rollout.
        An episode running across rollouts counts once, when it ends, provided the next
        call passes the observation this one returned; :meth:`reset_rollouts`, or any
        other ``obs`` (e.g. after ``env.reset()``), starts every episode return from zero. Observations are stored
        after ``env.step``, so the env must return fresh arrays (gymnasium's default
        ``copy=True``). The ``steps`` and ``scores`` counters are left to the training loop.
        """
        info = {} if info is None else info
        self.num_envs = int(env.num_envs)
        buffer = self._ensure_buffer()
        buffer.reset()
        n = self.num_envs
        if (
            self._episode_returns is None
            or len(self._episode_returns) != n
            or (obs is not self._rollout_obs)
        ):
            self._episode_returns = np.zeros(n)
        episode_returns = self._episode_returns
        completed: list[float] = []
        mask = action_mask_from_info(info)
        for _ in range(buffer.capacity):
            with torch.inference_mode():
                dist, value = self._forward(obs, mask)
                action, log_prob = dist.act(deterministic=False)
            next_obs, reward, terminated, truncated, info = env.step(self._env_action(action))
            reward = np.array(reward, dtype=np.float32).reshape(n)
            terminated = np.asarray(terminated, dtype=bool).reshape(n)
            truncated = np.asarray(truncated, dtype=bool).reshape(n)
            done = terminated | truncated
            episode_returns += reward
            cut = truncated & ~terminated
            if cut.any():
                envs = np.flatnonzero(cut)
                reward[envs] += self.gamma * self._final_values(info, envs)
            buffer.add(obs, action, reward, done, value, log_prob, mask)
            if done.any():
                for i in np.flatnonzero(done):
                    completed.append(float(episode_returns[i]))
                    episode_returns[i] = 0.0
            obs = next_obs
            mask = action_mask_from_info(info)
        buffer.compute_returns_and_advantages(self._value(obs))
        self._rollout_obs = obs
        return obs, info, completed

    def _final_values(self, info: dict[str, Any], envs: np.ndarray) -> np.ndarray:
        """``V`` of the final observations of environments ``envs`` (same-step autoreset
        puts them in ``info["final_obs"]``)."""
        final, flags = info.get("final_obs"), info.get("_final_obs")
        if final is None or flags is None or not np.all(np.asarray(flags)[envs]):
            raise ValueError(
                "a truncated episode's final observation is missing from info['final_obs']: "
                "collect_rollouts needs a vector env with autoreset_mode=SAME_STEP"
            )
        batch = _stack_obs([final[i] for i in envs], self.observation_space)
        return self._value(batch).cpu().numpy()

    # -- learning -------------------------------------------------------------------------
    def _minibatch_loss(self, batch: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The PPO loss of one minibatch (class docstring) and, detached, the values of
        :data:`METRICS` for it."""
        dist, value = self._forward(batch.obs, batch.action_masks)
        log_ratio = dist.log_prob(batch.actions) - batch.log_probs
        ratio = log_ratio.exp()
        advantages = batch.advantages
        if advantages.numel() > 1:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        clipped = ratio.clamp(1.0 - self.clip_coef, 1.0 + self.clip_coef)
        policy_loss = -torch.min(advantages * ratio, advantages * clipped).mean()
        value_clipped = batch.values + (value - batch.values).clamp(-self.clip_coef, self.clip_coef)
        value_error = torch.max((value - batch.returns) ** 2, (value_clipped - batch.returns) ** 2)
        value_loss = 0.5 * value_error.mean()
        entropy = dist.entropy().mean()
        loss = policy_loss - self.ent_coef * entropy + self.vf_coef * value_loss
        with torch.no_grad():
            approx_kl = ((ratio - 1.0) - log_ratio).mean()
            clip_fraction = ((ratio - 1.0).abs() > self.clip_coef).float().mean()
            stats = torch.stack([loss, policy_loss, value_loss, entropy, approx_kl, clip_fraction])
        return loss, stats

    def learn(self) -> dict[str, float]:
        """PPO updates on the collected rollout (see the class docstring).

        Returns the means over the minibatches evaluated of ``loss``, ``policy_loss``,
        ``value_loss``, ``entropy``, ``approx_kl`` (Schulman's ``(r - 1) - log r``
        estimator) and ``clip_fraction``, plus ``updates`` (optimiser steps taken) and
        ``early_stop`` (1.0 when ``target_kl`` ended the epochs). The minibatch whose KL
        exceeded ``target_kl`` is measured but not stepped on.
        """
        buffer = self.rollout_buffer
        if buffer is None or not buffer.ready:
            raise RuntimeError("learn() needs a rollout: call collect_rollouts() first")
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        kl_index = METRICS.index("approx_kl")
        totals = torch.zeros(len(METRICS), device=self.device)
        evaluated = updates = 0
        stopped = False
        for _ in range(self.update_epochs):
            for batch in buffer.minibatches(self.batch_size):
                loss, stats = self._minibatch_loss(batch)
                totals += stats
                evaluated += 1
                # .item() waits for the device, so the KL is only read when it matters.
                if self.target_kl is not None and stats[kl_index].item() > self.target_kl:
                    stopped = True
                    break
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm)
                self.optimizer.step()
                updates += 1
            if stopped:
                break
        metrics = dict(zip(METRICS, (totals / max(evaluated, 1)).tolist(), strict=True))
        metrics["updates"] = float(updates)
        metrics["early_stop"] = float(stopped)
        return metrics
