"""Concrete RL networks: Q, continuous Q, value, deterministic and stochastic actors."""

from __future__ import annotations

import math
from typing import Any

import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Categorical, Normal

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


class QNetwork(EvolvableNetwork):
    """Q-values of every action of a Discrete action space: ``(batch, n)``."""

    spec: QNetworkSpec

    def _check_spaces(self) -> None:
        if not isinstance(self.action_space, spaces.Discrete):
            raise TypeError(f"QNetwork needs a Discrete action space, got {self.action_space!r}")

    def head_outputs(self) -> int:
        return int(self.action_space.n)

    def forward(self, obs: Any) -> torch.Tensor:
        return self.head(self.extract_features(obs))


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
        latent = self.extract_features(obs)
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
        squashed = self.head(self.extract_features(obs))  # in [-1, 1]
        return self.action_low + (squashed + 1.0) * 0.5 * (self.action_high - self.action_low)


class StochasticActor(EvolvableNetwork):
    """Policy distribution: Categorical (Discrete) or diagonal Gaussian (Box).

    ``forward(obs)`` returns ``(action, log_prob, entropy)``, each per sample. Box actions:
    a state-independent learnable ``log_std`` (initialised to 0). With ``squash_output`` the
    Gaussian sample ``u`` becomes ``low + (tanh(u) + 1) / 2 * (high - low)`` and the
    log-probability includes the change-of-variables term; the entropy returned is then the
    entropy of the underlying Gaussian (the squashed one has no closed form).
    """

    spec: StochasticActorSpec
    _LOG_STD_BOUNDS = (-20.0, 2.0)

    def _check_spaces(self) -> None:
        space = self.action_space
        self.discrete = isinstance(space, spaces.Discrete)
        if self.discrete:
            return
        self.action_dim = _flat_box(space, "StochasticActor")
        if self.spec.squash_output:
            low, high = _box_bounds(space)
            self.register_buffer("action_low", low)
            self.register_buffer("action_high", high)
        self.log_std = nn.Parameter(torch.zeros(self.action_dim))

    def head_outputs(self) -> int:
        return int(self.action_space.n) if self.discrete else self.action_dim

    def _gaussian(self, obs: Any) -> Normal:
        mean = self.head(self.extract_features(obs))
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
        if self.discrete:
            dist = Categorical(logits=self.head(self.extract_features(obs)))
            action = dist.probs.argmax(dim=-1) if deterministic else dist.sample()
            return action, dist.log_prob(action), dist.entropy()
        dist = self._gaussian(obs)
        u = dist.mean if deterministic else dist.rsample()
        log_prob = dist.log_prob(u).sum(dim=-1)
        entropy = dist.entropy().sum(dim=-1)
        if not self.spec.squash_output:
            return u, log_prob, entropy
        action, log_det = self._squash(u)
        return action, log_prob - log_det, entropy

    def evaluate_actions(self, obs: Any, action: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log_prob, entropy)`` of given actions (e.g. for PPO)."""
        if self.discrete:
            dist = Categorical(logits=self.head(self.extract_features(obs)))
            action = action.reshape(-1).long()
            return dist.log_prob(action), dist.entropy()
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
