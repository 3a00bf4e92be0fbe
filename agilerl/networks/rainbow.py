"""``RainbowQNetwork``: evolvable encoder + dueling distributional head with noisy outputs.

The encoder is built exactly as for every other :class:`EvolvableNetwork`. The head
(:class:`DuelingDistributionalHead`, built from ``spec.head_config``) has two streams, each
an :class:`EvolvableMLP` whose output layer is a :class:`NoisyLinear` (factorised Gaussian
noise, Fortunato et al. 2018): a value stream with ``num_atoms`` outputs and an advantage
stream with ``n_actions * num_atoms`` outputs. Their logits are combined as
``value + advantage - advantage.mean(actions)`` and a softmax over the atoms gives the
return distribution; Q-values are its mean over ``support = linspace(v_min, v_max,
num_atoms)``.

Mutations keep the names of the other networks: ``encoder.<name>``, ``head.<name>`` (the
same mutation, with the same draws, is applied to both streams so they keep one shared
``head_config``) and ``grow_latent`` / ``shrink_latent``. Growth is exact: new hidden units
and new latent inputs get zero outgoing weights, in the noisy output layers for both the
mean (``weight``) and the noise scale (``weight_sigma``), so outputs do not change, in eval
mode and also in train mode for the same noise sample.

``num_atoms``, ``v_min``, ``v_max`` and ``noise_std`` are the algorithm's settings
(:class:`~agilerl.models.RainbowDQNSpec`), passed as keyword arguments; :meth:`clone`
passes them on.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, ClassVar, cast

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from agilerl.models.networks import MlpSpec, RainbowQNetworkSpec
from agilerl.modules.base import EvolvableModule, MutationInfo, mutation
from agilerl.modules.mlp import EvolvableMLP
from agilerl.modules.stacked import STACKED_LAYERS, StackedLinear
from agilerl.networks.base import EvolvableNetwork, Observation, build_encoder


def scaled_noise(
    size: int, like: torch.Tensor, generator: torch.Generator | None = None
) -> torch.Tensor:
    """``f(x) = sign(x) sqrt(|x|)`` of ``size`` standard normal draws (from ``generator``,
    else torch's global one), on ``like``'s device and dtype: one factor of factorised
    Gaussian noise."""
    x = torch.randn(size, generator=generator, dtype=like.dtype)
    return (x.sign() * x.abs().sqrt()).to(like.device)


class NoisyLinear(nn.Module):
    """Linear layer with factorised Gaussian noise on its weights and bias.

    Parameters are named ``weight`` / ``bias`` (the means, as in ``nn.Linear``) and
    ``weight_sigma`` / ``bias_sigma`` (noise scales, initialised to
    ``sigma_init / sqrt(in_features)``); the current noise sample lives in the buffers
    ``weight_epsilon`` / ``bias_epsilon`` and is redrawn by :meth:`reset_noise`. Noise is
    used in training mode only; in eval mode the layer is the deterministic mean layer.
    """

    weight_epsilon: torch.Tensor
    bias_epsilon: torch.Tensor

    def __init__(self, in_features: int, out_features: int, sigma_init: float = 0.5) -> None:
        super().__init__()
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.sigma_init = float(sigma_init)
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("weight_epsilon", torch.zeros(out_features, in_features))
        self.register_buffer("bias_epsilon", torch.zeros(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            self.bias.uniform_(-bound, bound)
            self.weight_sigma.fill_(self.sigma_init * bound)
            self.bias_sigma.fill_(self.sigma_init * bound)

    @torch.no_grad()
    def reset_noise(self) -> None:
        eps_in = scaled_noise(self.in_features, self.weight_epsilon)
        eps_out = scaled_noise(self.out_features, self.weight_epsilon)
        self.weight_epsilon.copy_(torch.outer(eps_out, eps_in))
        self.bias_epsilon.copy_(eps_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            weight = self.weight + self.weight_sigma * self.weight_epsilon
            bias = self.bias + self.bias_sigma * self.bias_epsilon
        else:
            weight, bias = self.weight, self.bias
        return nn.functional.linear(x, weight, bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " + (
            f"sigma_init={self.sigma_init}"
        )


class StackedNoisyLinear(StackedLinear):
    """P :class:`NoisyLinear` layers as one: each copy's mean weights, noise scales and
    current noise sample, and in training mode ``mean + sigma * epsilon`` as the layer's
    own forward. :meth:`reset_noise` draws one copy's new sample from that agent's
    generator, in the order its own layer draws from torch's."""

    stacks_buffers: ClassVar[bool] = True
    weight_sigma: nn.Parameter  # (P, out, in)
    bias_sigma: nn.Parameter  # (P, out)
    weight_epsilon: torch.Tensor  # (P, out, in): each copy's current noise sample
    bias_epsilon: torch.Tensor  # (P, out)

    def __init__(self, layers: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__(layers, trainable)
        noisy = cast("Sequence[NoisyLinear]", layers)
        with torch.no_grad():
            self.register_buffer("weight_epsilon", torch.stack([n.weight_epsilon for n in noisy]))
            self.register_buffer("bias_epsilon", torch.stack([n.bias_epsilon for n in noisy]))

    def weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.training:  # the mean layer, as NoisyLinear in eval mode
            return self.weight, self.bias
        return (
            self.weight + self.weight_sigma * self.weight_epsilon,
            self.bias + self.bias_sigma * self.bias_epsilon,
        )

    @torch.no_grad()
    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        out_features, in_features = (int(n) for n in self.weight_epsilon.shape[1:])
        eps_in = scaled_noise(in_features, self.weight_epsilon, generator)
        eps_out = scaled_noise(out_features, self.weight_epsilon, generator)
        self.weight_epsilon[agent] = torch.outer(eps_out, eps_in)
        self.bias_epsilon[agent] = eps_out

    def write_back(self, layers: Sequence[nn.Module]) -> None:
        super().write_back(layers)
        with torch.no_grad():
            for p, layer in enumerate(cast("Sequence[NoisyLinear]", layers)):
                layer.weight_epsilon.copy_(self.weight_epsilon[p])
                layer.bias_epsilon.copy_(self.bias_epsilon[p])


STACKED_LAYERS[NoisyLinear] = StackedNoisyLinear


class NoisyMLP(EvolvableMLP):
    """:class:`EvolvableMLP` whose output layer is a :class:`NoisyLinear`.

    The spec's ``output_activation`` is ignored (the outputs are logits); ``init_layers``
    applies to the hidden layers (the noisy layer keeps its own initialisation) and
    ``output_vanish`` scales the noisy layer's means by 0.1.
    """

    def __init__(self, num_inputs: int, num_outputs: int, spec: MlpSpec, noise_std: float) -> None:
        self.noise_std = float(noise_std)  # read by _build, called by the base constructor
        super().__init__(num_inputs, num_outputs, spec)

    def clone(self) -> NoisyMLP:
        twin = type(self)(self.num_inputs, self.num_outputs, self.spec, self.noise_std)
        twin.to(*self._device_dtype())
        twin.load_state_dict(self.state_dict())
        return twin

    def _build(self) -> None:
        super()._build()
        self.out = NoisyLinear(self.out.in_features, self.num_outputs, self.noise_std)
        if self.spec.output_vanish:
            with torch.no_grad():
                self.out.weight.mul_(0.1)
                self.out.bias.mul_(0.1)
        self.out_act = nn.Identity()

    @mutation("add_node")
    def add_node(self, rng: np.random.Generator) -> MutationInfo:
        info = super().add_node(rng)  # zeroes the new input columns of ``out.weight``
        if info and info["layer"] == len(self.spec.hidden_size) - 1:
            with torch.no_grad():
                self.out.weight_sigma[:, info["old_size"] :] = 0.0
        return info

    def reset_noise(self) -> None:
        self.out.reset_noise()


def _both_streams(name: str) -> Any:
    @mutation(name)
    def method(self: DuelingDistributionalHead, rng: np.random.Generator) -> MutationInfo:
        return self._mutate_streams(name, rng)

    method.__name__ = name
    method.__doc__ = f"``{name}`` applied, with the same draws, to both streams."
    return method


class DuelingDistributionalHead(EvolvableModule):
    """Value and advantage streams (shared ``MlpSpec``) -> per-action atom logits.

    ``forward(latent)`` returns logits ``(batch, n_actions, num_atoms)``.
    """

    spec: MlpSpec

    def __init__(
        self,
        num_inputs: int,
        num_actions: int,
        num_atoms: int,
        noise_std: float,
        spec: MlpSpec,
    ) -> None:
        super().__init__(spec)
        self.num_inputs = int(num_inputs)
        self.num_actions = int(num_actions)
        self.num_atoms = int(num_atoms)
        self.noise_std = float(noise_std)
        self._build()

    def constructor_args(self) -> tuple[int, int, int, float]:
        return (self.num_inputs, self.num_actions, self.num_atoms, self.noise_std)

    def _build(self) -> None:
        self.value = NoisyMLP(self.num_inputs, self.num_atoms, self.spec, self.noise_std)
        self.advantage = NoisyMLP(
            self.num_inputs, self.num_actions * self.num_atoms, self.spec, self.noise_std
        )

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        batch = latent.shape[0]
        value = self.value(latent).view(batch, 1, self.num_atoms)
        advantage = self.advantage(latent).view(batch, self.num_actions, self.num_atoms)
        return value + advantage - advantage.mean(dim=1, keepdim=True)

    def set_num_inputs(self, num_inputs: int) -> None:
        """Resize the latent input of both streams (growth is exact: zero new columns)."""
        self.num_inputs = int(num_inputs)
        self.value.set_num_inputs(num_inputs)
        self.advantage.set_num_inputs(num_inputs)

    def reset_noise(self) -> None:
        self.value.reset_noise()
        self.advantage.reset_noise()

    def _mutate_streams(self, name: str, rng: np.random.Generator) -> MutationInfo:
        seed = int(rng.integers(2**31 - 1))
        info = self.value.mutate(name, np.random.default_rng(seed))
        if not info:
            return {}
        other = self.advantage.mutate(name, np.random.default_rng(seed))
        if self.value.spec != self.advantage.spec or other != info:  # pragma: no cover
            raise RuntimeError(f"streams diverged on {name}: {info} vs {other}")
        self.spec = self.value.spec.model_copy(deep=True)
        return info

    # Same mutation names as EvolvableMLP, so ``head.<name>`` matches the other networks.
    add_layer = _both_streams("add_layer")
    remove_layer = _both_streams("remove_layer")
    add_node = _both_streams("add_node")
    remove_node = _both_streams("remove_node")
    change_activation = _both_streams("change_activation")


class RainbowQNetwork(EvolvableNetwork[RainbowQNetworkSpec]):
    """Distributional dueling Q-network with noisy output layers (Rainbow DQN).

    ``forward(obs)``: Q-values ``(batch, n_actions)``; ``dist(obs)``: probabilities
    ``(batch, n_actions, num_atoms)``; ``log_dist(obs)``: their logs (log-softmax, for a
    cross-entropy loss); ``support``: buffer ``linspace(v_min, v_max, num_atoms)``.
    """

    spec: RainbowQNetworkSpec
    head: DuelingDistributionalHead
    action_space: spaces.Discrete  # checked by _check_spaces
    support: torch.Tensor

    def constructor_args(self) -> tuple[spaces.Space, spaces.Discrete]:
        return (self.observation_space, self.action_space)

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Discrete,
        spec: RainbowQNetworkSpec,
        *,
        num_atoms: int = 51,
        v_min: float = -200.0,
        v_max: float = 200.0,
        noise_std: float = 0.5,
    ) -> None:
        if int(num_atoms) < 2:
            raise ValueError(f"num_atoms must be at least 2, got {num_atoms}")
        if not v_min < v_max:
            raise ValueError(f"v_min must be below v_max, got {v_min} and {v_max}")
        # Read by _check_spaces / _build, which the base constructor calls.
        self._rainbow = {
            "num_atoms": int(num_atoms),
            "v_min": float(v_min),
            "v_max": float(v_max),
            "noise_std": float(noise_std),
        }
        super().__init__(observation_space, action_space, spec)

    @property
    def num_atoms(self) -> int:
        return self._rainbow["num_atoms"]

    @property
    def v_min(self) -> float:
        return self._rainbow["v_min"]

    @property
    def v_max(self) -> float:
        return self._rainbow["v_max"]

    @property
    def noise_std(self) -> float:
        return self._rainbow["noise_std"]

    def _check_spaces(self) -> None:
        if not isinstance(self.action_space, spaces.Discrete):
            raise TypeError(
                f"RainbowQNetwork needs a Discrete action space, got {self.action_space!r}"
            )
        self.register_buffer("support", torch.linspace(self.v_min, self.v_max, self.num_atoms))

    def head_outputs(self) -> int:
        return int(self.action_space.n)

    def _build(self) -> None:
        spec = self.spec
        self.encoder = build_encoder(self.observation_space, spec.latent_dim, spec.encoder_config)
        self.head = DuelingDistributionalHead(
            self.head_extra_inputs() + spec.latent_dim,
            int(self.action_space.n),
            self.num_atoms,
            self.noise_std,
            spec.head_config,
        )

    def with_spec(self, spec: RainbowQNetworkSpec) -> RainbowQNetwork:
        return type(self)(*self.constructor_args(), spec, **self._rainbow)

    def clone(self) -> RainbowQNetwork:
        """An independent copy: same spec, settings and weights (noise sample included)."""
        twin = type(self)(*copy.deepcopy(self.constructor_args()), self.spec, **self._rainbow)
        twin.to(*self._device_dtype())
        twin.load_state_dict(self.state_dict())
        twin.train(self.training)
        return twin

    def reset_noise(self) -> None:
        """Draw a new noise sample for every noisy layer."""
        self.head.reset_noise()

    def stacking_parts(self) -> dict[str, nn.Module]:
        """The encoder and the head's two noisy streams (the head's own code, which joins
        them, runs around them), in the order :meth:`reset_noise` draws their noise."""
        return {
            "encoder": self.encoder,
            "head.value": self.head.value,
            "head.advantage": self.head.advantage,
        }

    def logits(self, obs: Observation) -> torch.Tensor:
        """Atom logits ``(batch, n_actions, num_atoms)``."""
        return self.head(self.extract_features(obs))

    def dist(self, obs: Observation) -> torch.Tensor:
        """Return-distribution probabilities ``(batch, n_actions, num_atoms)``."""
        return torch.softmax(self.logits(obs), dim=-1)

    def log_dist(self, obs: Observation) -> torch.Tensor:
        """Log-probabilities ``(batch, n_actions, num_atoms)`` (numerically stable)."""
        return torch.log_softmax(self.logits(obs), dim=-1)

    def q_from_dist(self, probs: torch.Tensor) -> torch.Tensor:
        """Q-values ``(batch, n_actions)`` of probabilities ``(..., num_atoms)``."""
        return (probs * self.support).sum(dim=-1)

    def forward(self, obs: Observation) -> torch.Tensor:
        return self.q_from_dist(self.dist(obs))
