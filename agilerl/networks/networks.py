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

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from agilerl.models.networks import (
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    QNetworkSpec,
    StochasticActorSpec,
    ValueNetworkSpec,
)
from agilerl.modules.base import respec
from agilerl.networks.base import EvolvableNetwork, Observation
from agilerl.networks.distributions import ActionLike, make_action_distribution


def _box_bounds(space: spaces.Box) -> tuple[torch.Tensor, torch.Tensor]:
    low = torch.as_tensor(space.low, dtype=torch.float32).reshape(-1)
    high = torch.as_tensor(space.high, dtype=torch.float32).reshape(-1)
    if not (torch.isfinite(low).all() and torch.isfinite(high).all()):
        raise ValueError("actions must be bounded (finite low and high)")
    return low, high


def _box(space: spaces.Space | None, what: str) -> spaces.Box:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"{what} needs a Box action space, got {space!r}")
    return space


def _flat_box(space: spaces.Space | None, what: str) -> int:
    return int(math.prod(_box(space, what).shape))


def _multi_discrete(module: nn.Module, space: spaces.MultiDiscrete) -> list[int]:
    """Register ``module.action_start`` (flat, int64, not saved) and return the flat ``nvec``."""
    start = torch.as_tensor(np.asarray(space.start, dtype=np.int64).reshape(-1))
    module.register_buffer("action_start", start, persistent=False)
    return [int(n) for n in np.asarray(space.nvec).reshape(-1)]


def split_per_sub_action(values: torch.Tensor, nvec: list[int]) -> tuple[torch.Tensor, ...]:
    """``(batch, sum(nvec))`` -> one ``(batch, nvec[i])`` view per sub-action ``i``."""
    return values.split(nvec, dim=-1)


class QNetwork(EvolvableNetwork[QNetworkSpec]):
    """Q-values of every action: ``(batch, n)`` for ``Discrete(n)``; for a MultiDiscrete
    space, one Q-value per choice of every sub-action, ``(batch, sum(nvec))`` in the layout
    of the module docstring (:meth:`split_q_values` splits it, :meth:`greedy_action` picks
    the best choice of each sub-action independently)."""

    spec: QNetworkSpec
    action_space: spaces.Discrete | spaces.MultiDiscrete  # checked by _check_spaces
    action_start: torch.Tensor  # MultiDiscrete only: registered by _multi_discrete

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

    def forward(self, obs: Observation) -> torch.Tensor:
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


class ValueNetwork(EvolvableNetwork[ValueNetworkSpec]):
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

    def forward(self, obs: Observation) -> torch.Tensor:
        return self.head(self.extract_features(obs))


class ContinuousQNetwork(EvolvableNetwork[ContinuousQNetworkSpec]):
    """``Q(s, a)`` for a Box action space: ``(batch, 1)``; the head reads ``[a, latent]``."""

    spec: ContinuousQNetworkSpec

    def _check_spaces(self) -> None:
        self.action_dim = _flat_box(self.action_space, "ContinuousQNetwork")

    def head_outputs(self) -> int:
        return 1

    def head_extra_inputs(self) -> int:
        return self.action_dim

    def forward(self, obs: Observation, action: torch.Tensor) -> torch.Tensor:
        return self.from_latent(self.extract_features(obs), action)

    def from_latent(self, latent: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """``Q`` of encoded observations: how an agent that encodes once (a shared
        encoder) asks several heads."""
        action = action.to(latent).reshape(latent.shape[0], -1)
        return self.head(torch.cat([action, latent], dim=1))


class DeterministicActor(EvolvableNetwork[DeterministicActorSpec]):
    """Action in a Box's bounds: ``low + (tanh(head) + 1) / 2 * (high - low)``.

    The head's ``output_activation`` must be Tanh or null (null is set to Tanh, so the spec
    says what is built).
    """

    spec: DeterministicActorSpec
    action_low: torch.Tensor
    action_high: torch.Tensor

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
        low, high = _box_bounds(_box(self.action_space, "DeterministicActor"))
        self.register_buffer("action_low", low)
        self.register_buffer("action_high", high)

    def head_outputs(self) -> int:
        return self.action_dim

    def forward(self, obs: Observation) -> torch.Tensor:
        return self.scale(self.head(self.extract_features(obs)))

    def scale(self, squashed: torch.Tensor) -> torch.Tensor:
        """Head outputs in [-1, 1] (the normalised action) -> actions in the bounds."""
        return self.action_low + (squashed + 1.0) * 0.5 * (self.action_high - self.action_low)


class StochasticActor(EvolvableNetwork[StochasticActorSpec]):
    """Policy distribution; ``forward(obs)`` returns ``(action, log_prob, entropy)``, the
    last two of shape ``(batch,)``. The distribution comes from the action space through
    :func:`~agilerl.networks.distributions.make_action_distribution` (held as
    :attr:`distribution`; its module docstring gives each space's distribution):

    * Discrete: actions int64 ``(batch,)``.
    * MultiDiscrete: actions int64 ``(batch, *space.shape)`` (``start`` added).
    * MultiBinary: actions float 0/1 of shape ``(batch, *space.shape)``.
    * Box: actions ``(batch, *space.shape)``, the Gaussian sample, or with
      ``squash_output`` the sample squashed into the bounds (the log-probability includes
      the change-of-variables term; the entropy is the Gaussian's).

    ``deterministic=True`` gives the mode (argmax, bits whose probability exceeds 1/2, the
    Gaussian mean). ``squash_output`` only applies to Box actions.
    """

    spec: StochasticActorSpec

    def _check_spaces(self) -> None:
        if self.action_space is None:
            raise TypeError("StochasticActor needs an action space")
        self.distribution = make_action_distribution(self.action_space, self.spec.squash_output)

    def head_outputs(self) -> int:
        return self.distribution.num_params

    def stacking_parts(self) -> dict[str, nn.Module]:
        parts = super().stacking_parts()
        if next(self.distribution.parameters(), None) is not None:
            parts["distribution"] = self.distribution  # a Gaussian's learnt log_std
        return parts

    def forward(
        self, obs: Observation, deterministic: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        dist = self.distribution(self.head(self.extract_features(obs)))
        sample = dist.sample(deterministic)
        return self.distribution.actions(sample), dist.log_prob(sample), dist.entropy()

    def evaluate_actions(
        self, obs: Observation, action: ActionLike
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(log_prob, entropy)`` of given actions, each ``(batch,)``.

        Actions as :meth:`forward` returns them (tensors or arrays, batch first)."""
        dist = self.distribution(self.head(self.extract_features(obs)))
        return dist.log_prob(self.distribution.samples(action)), dist.entropy()
