"""Concrete RL networks: Q, continuous Q, value, deterministic and stochastic actors.

Action spaces: ``QNetwork`` takes Discrete or MultiDiscrete actions, ``StochasticActor``
Discrete, MultiDiscrete, MultiBinary or Box ones, the other networks Box ones.

MultiDiscrete layout (``QNetwork`` outputs, ``StochasticActor`` logits): the space's ``nvec``
is flattened in C order into sub-actions ``0 .. D-1``; the head's ``sum(nvec)`` outputs hold
sub-action 0's ``nvec[0]`` choices first, then sub-action 1's, and so on
(:func:`split_per_sub_action`). Column ``j`` of sub-action ``i`` stands for the action value
``start[i] + j``. Actions are int64 tensors of shape ``(batch, *space.shape)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Bernoulli, Categorical, Normal

from agilerl.models.networks import (
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    QNetworkSpec,
    StochasticActorSpec,
    ValueNetworkSpec,
)
from agilerl.modules.base import respec
from agilerl.networks.base import EvolvableNetwork


def _box_bounds(space: spaces.Box) -> tuple[torch.Tensor, torch.Tensor]:
    low = torch.as_tensor(space.low, dtype=torch.float32).reshape(-1)
    high = torch.as_tensor(space.high, dtype=torch.float32).reshape(-1)
    if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
        raise ValueError("actions must be bounded (finite low and high)")
    return low, high


def _flat_box(space: spaces.Space, what: str) -> int:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{what} needs a Box action space, got {space!r}")
    return int(math.prod(space.shape))


def _multi_discrete(module: nn.Module, space: spaces.MultiDiscrete) -> list[int]:
    """Register ``module.action_start`` (flat, int64, not saved) and return the flat ``nvec``."""
    start = torch.as_tensor(np.asarray(space.start, dtype=np.int64).reshape(-1))
    module.register_buffer("action_start", start, persistent=False)
    return [int(n) for n in np.asarray(space.nvec).reshape(-1)]


def split_per_sub_action(values: torch.Tensor, nvec: list[int]) -> tuple[torch.Tensor, ...]:
    """``(batch, sum(nvec))`` -> one ``(batch, nvec[i])`` view per sub-action ``i``."""
    return values.split(nvec, dim=-1)


class QNetwork(EvolvableNetwork):
    """Q-values of every action: ``(batch, n)`` for ``Discrete(n)``; for a MultiDiscrete
    space, one Q-value per choice of every sub-action, ``(batch, sum(nvec))`` in the layout
    of the module docstring (:meth:`split_q_values` splits it, :meth:`greedy_action` picks
    the best choice of each sub-action independently)."""

    spec: QNetworkSpec

    def _check_spaces(self) -> None:
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            self.nvec = [int(space.n)]
        elif isinstance(space, spaces.MultiDiscrete):
            self.nvec = _multi_discrete(self, space)
        else:
            raise TypeError(
                f"QNetwork needs a Discrete or MultiDiscrete action space, got {space!r}"
            )

    def head_outputs(self) -> int:
        return sum(self.nvec)

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.extract_features(obs))

    def split_q_values(self, q_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Q-values ``(batch, sum(nvec))`` -> one ``(batch, nvec[i])`` tensor per sub-action
        (a single ``(batch, n)`` tensor for a Discrete space)."""
        return split_per_sub_action(q_values, self.nvec)

    def greedy_action(self, q_values: torch.Tensor) -> torch.Tensor:
        """Best action per sample: ``(batch,)`` index for Discrete (as ``argmax``); for
        MultiDiscrete, int64 ``(batch, *space.shape)`` with each sub-action's argmax plus
        its ``start``."""
        if isinstance(self.action_space, spaces.Discrete):
            return q_values.argmax(dim=-1)
        index = torch.stack([q.argmax(dim=-1) for q in self.split_q_values(q_values)], dim=-1)
        return (index + self.action_start).reshape(-1, *self.action_space.shape)


class ValueNetwork(EvolvableNetwork):
    """State value ``V(s)``: ``(batch, 1)``. The action space is not used (may be None)."""

    spec: ValueNetworkSpec

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space | None,
        spec: ValueNetworkSpec,
    ) -> None:
        super().__init__(observation_space, action_space, spec)

    def head_outputs(self) -> int:
        return 1

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.extract_features(obs))


class ContinuousQNetwork(EvolvableNetwork):
    """``Q(s, a)`` for a Box action space: ``(batch, 1)``; the head reads ``[a, latent]``."""

    spec: ContinuousQNetworkSpec

    def _check_spaces(self) -> None:
        self.action_dim = _flat_box(self.action_space, "ContinuousQNetwork")

    def head_outputs(self) -> int:
        return 1

    def head_extra_inputs(self) -> int:
        return self.action_dim

    def forward(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        return self.from_latent(self.extract_features(obs), action)

    def from_latent(self, latent: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``Q`` of encoded observations: how an agent that encodes once (a shared
        encoder) asks several heads."""
        action = action.to(latent).reshape(latent.shape[0], -1)
        return self.head(torch.cat([action, latent], dim=1))


class DeterministicActor(EvolvableNetwork):
    """Action in a Box's bounds: ``low + (tanh(head) + 1) / 2 * (high - low)``.

    The head's ``output_activation`` must be Tanh or null (null is set to Tanh, so the spec
    says what is built).
    """

    spec: DeterministicActorSpec

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Box,
        spec: DeterministicActorSpec,
    ) -> None:
        out_act = spec.head_config.output_activation
        if out_act not in (None, "Tanh"):
            raise ValueError(
                f"DeterministicActor head output_activation must be Tanh, got {out_act}"
            )
        if out_act is None:
            head = respec(spec.head_config, output_activation="Tanh")
            spec = respec(spec, head_config=head.model_dump())
        super().__init__(observation_space, action_space, spec)

    def _check_spaces(self) -> None:
        self.action_dim = _flat_box(self.action_space, "DeterministicActor")
        low, high = _box_bounds(self.action_space)
        self.register_buffer("action_low", low)
        self.register_buffer("action_high", high)

    def head_outputs(self) -> int:
        return self.action_dim

    def forward(self, obs: Any) -> torch.Tensor:
        return self.scale(self.head(self.extract_features(obs)))

    def scale(self, squashed: torch.Tensor) -> torch.Tensor:
        """Head outputs in [-1, 1] (the normalised action) -> actions in the bounds."""
        return self.action_low + (squashed + 1.0) * 0.5 * (self.action_high - self.action_low)


class StochasticActor(EvolvableNetwork):
    """Policy distribution; ``forward(obs)`` returns ``(action, log_prob, entropy)``, the
    last two of shape ``(batch,)``.

    * Discrete: Categorical; actions int64 ``(batch,)``.
    * MultiDiscrete: independent Categoricals, one per sub-action (logits laid out as in
      the module docstring); actions int64 ``(batch, *space.shape)`` (``start`` added);
      log-probability and entropy are the sums over sub-actions.
    * MultiBinary: independent Bernoullis (the head outputs one logit per bit); actions
      float 0/1 of shape ``(batch, *space.shape)``; log-probability and entropy summed.
    * Box: diagonal Gaussian with a state-independent learnable ``log_std`` (initialised
      to 0). With ``squash_output`` the Gaussian sample ``u`` becomes
      ``low + (tanh(u) + 1) / 2 * (high - low)`` and the log-probability includes the
      change-of-variables term; the entropy returned is then the entropy of the underlying
      Gaussian (the squashed one has no closed form).

    ``deterministic=True`` gives the mode (argmax, bits whose probability exceeds 1/2, the
    Gaussian mean). ``squash_output`` only applies to Box actions.
    """

    spec: StochasticActorSpec
    _LOG_STD_BOUNDS = (-20.0, 2.0)

    def _check_spaces(self) -> None:
        space = self.action_space
        self.discrete = isinstance(space, spaces.Discrete)
        if self.discrete:
            self.kind = "discrete"
        elif isinstance(space, spaces.MultiDiscrete):
            self.kind = "multidiscrete"
            self.nvec = _multi_discrete(self, space)
        elif isinstance(space, spaces.MultiBinary):
            self.kind = "multibinary"
            self.action_dim = int(math.prod(space.shape))
        else:
            self.kind = "box"
            self.action_dim = _flat_box(space, "StochasticActor")
            if self.spec.squash_output:
                low, high = _box_bounds(space)
                self.register_buffer("action_low", low)
                self.register_buffer("action_high", high)
            self.log_std = nn.Parameter(torch.zeros(self.action_dim))

    def head_outputs(self) -> int:
        if self.kind == "discrete":
            return int(self.action_space.n)
        if self.kind == "multidiscrete":
            return sum(self.nvec)
        return self.action_dim

    def _logits(self, obs: Any) -> torch.Tensor:
        return self.head(self.extract_features(obs))

    def _categoricals(self, obs: Any) -> list[Categorical]:
        """One Categorical per sub-action of a MultiDiscrete space."""
        return [
            Categorical(logits=part) for part in split_per_sub_action(self._logits(obs), self.nvec)
        ]

    def _multi_categorical(
        self, dists: list[Categorical], index: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Summed log-probability of ``index`` ``(batch, D)`` and summed entropy."""
        log_prob = sum(d.log_prob(index[:, i]) for i, d in enumerate(dists))
        entropy = sum(d.entropy() for d in dists)
        return log_prob, entropy

    def _gaussian(self, obs: Any) -> Normal:
        mean = self._logits(obs)
        log_std = self.log_std.clamp(*self._LOG_STD_BOUNDS)
        return Normal(mean, log_std.exp().expand_as(mean))

    def _squash(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Squashed action and ``sum log|d action / d u|``."""
        half_range = (self.action_high - self.action_low) * 0.5
        action = self.action_low + (torch.tanh(u) + 1.0) * half_range
        # log(1 - tanh(u)^2) = 2 * (log 2 - u - softplus(-2u)), stable for large |u|
        log_det = 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u)) + half_range.log()
        return action, log_det.sum(dim=-1)

    def forward(
        self, obs: Any, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if self.kind == "discrete":
            dist = Categorical(logits=self._logits(obs))
            action = dist.probs.argmax(dim=-1) if deterministic else dist.sample()
            return action, dist.log_prob(action), dist.entropy()
        if self.kind == "multidiscrete":
            dists = self._categoricals(obs)
            index = torch.stack(
                [d.probs.argmax(dim=-1) if deterministic else d.sample() for d in dists], dim=-1
            )
            log_prob, entropy = self._multi_categorical(dists, index)
            action = (index + self.action_start).reshape(-1, *self.action_space.shape)
            return action, log_prob, entropy
        if self.kind == "multibinary":
            dist = Bernoulli(logits=self._logits(obs))
            bits = (dist.logits > 0).to(dist.logits) if deterministic else dist.sample()
            log_prob = dist.log_prob(bits).sum(dim=-1)
            action = bits.reshape(-1, *self.action_space.shape)
            return action, log_prob, dist.entropy().sum(dim=-1)
        dist = self._gaussian(obs)
        u = dist.mean if deterministic else dist.rsample()
        log_prob = dist.log_prob(u).sum(dim=-1)
        entropy = dist.entropy().sum(dim=-1)
        if not self.spec.squash_output:
            return u, log_prob, entropy
        action, log_det = self._squash(u)
        return action, log_prob - log_det, entropy

    def evaluate_actions(self, obs: Any, action: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log_prob, entropy)`` of given actions (e.g. for PPO), each ``(batch,)``.

        Actions as :meth:`forward` returns them (tensors or arrays, batch first)."""
        action = torch.as_tensor(action)
        if self.kind == "discrete":
            dist = Categorical(logits=self._logits(obs))
            action = action.to(dist.logits.device).reshape(-1).long()
            return dist.log_prob(action), dist.entropy()
        if self.kind == "multidiscrete":
            dists = self._categoricals(obs)
            index = action.to(self.action_start.device).reshape(-1, len(self.nvec)).long()
            return self._multi_categorical(dists, index - self.action_start)
        if self.kind == "multibinary":
            dist = Bernoulli(logits=self._logits(obs))
            bits = action.to(dist.logits).reshape(dist.logits.shape)
            return dist.log_prob(bits).sum(dim=-1), dist.entropy().sum(dim=-1)
        dist = self._gaussian(obs)
        action = action.to(dist.mean).reshape(dist.mean.shape)
        entropy = dist.entropy().sum(dim=-1)
        if not self.spec.squash_output:
            return dist.log_prob(action).sum(dim=-1), entropy
        half_range = (self.action_high - self.action_low) * 0.5
        y = ((action - self.action_low) / half_range - 1.0).clamp(-1 + 1e-6, 1 - 1e-6)
        u = torch.atanh(y)
        _, log_det = self._squash(u)
        return dist.log_prob(u).sum(dim=-1) - log_det, entropy
