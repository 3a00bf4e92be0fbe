"""``EvolvableNetwork``: an evolvable encoder (chosen by ``arch``) plus an evolvable MLP head.

The encoder is built by the builder registered for the type of ``spec.encoder_config``
(:data:`ENCODER_BUILDERS`); it maps a preprocessed observation to ``spec.latent_dim``
features, which the head (an :class:`EvolvableMLP` built from ``spec.head_config``) maps to
the network's output. Mutations are exposed under the same names on every network built
from the same spec and observation space: ``encoder.<name>``, ``head.<name>`` and the
network's own ``grow_latent`` / ``shrink_latent`` (exact growth: new latent units have zero
weights in the head), so one sampled mutation can be replayed on an actor and its critic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeAlias, TypeVar

import numpy as np
import torch
from gymnasium import spaces
from pydantic import BaseModel
from torch import nn

from agilerl.models.networks import (
    CnnSpec,
    LstmSpec,
    MlpSpec,
    MultiInputSpec,
    NetworkFields,
    SimbaSpec,
    infer_encoder_arch,
)
from agilerl.modules.base import EvolvableModule, MutationInfo, draw_step, mutation, respec
from agilerl.modules.cnn import EvolvableCNN
from agilerl.modules.lstm import EvolvableLSTM
from agilerl.modules.mlp import EvolvableMLP, MlpEncoder
from agilerl.modules.multi_input import EvolvableMultiInput, flat_dim, is_image_space
from agilerl.modules.simba import EvolvableSimBa

LATENT_STEPS = (8, 16, 32)

#: One leaf of an observation (or of a batch of them) as environments and buffers hand it
#: over: an array, a tensor or a scalar (a Discrete observation).
ObsLeaf: TypeAlias = np.ndarray | torch.Tensor | np.generic | int | float | bool
#: An observation or a batch of them: a leaf, or a dict (Dict spaces) or tuple/list
#: (Tuple spaces) of them.
Observation: TypeAlias = ObsLeaf | Mapping[str, "Observation"] | Sequence["Observation"]
#: What :func:`preprocess` gives an encoder: a float tensor, or a dict/tuple of them.
EncoderInput: TypeAlias = torch.Tensor | Mapping[str, "EncoderInput"] | tuple["EncoderInput", ...]
#: The encoder specs a network's ``encoder_config`` may hold.
EncoderSpec: TypeAlias = MlpSpec | CnnSpec | LstmSpec | MultiInputSpec | SimbaSpec
NetSpecT = TypeVar("NetSpecT", bound=NetworkFields)


# -- observations --------------------------------------------------------------------------
def _one_hot(x: torch.Tensor, n: int) -> torch.Tensor:
    return nn.functional.one_hot(x.long(), int(n)).float()


def preprocess(
    obs: Observation,
    space: spaces.Space,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> EncoderInput:
    """Observation(s) with a leading batch dimension -> tensor(s) of ``dtype`` for an encoder.

    Box: as is (images stay ``(C, H, W)``, uint8 ones scaled to [0, 1]; other Boxes are
    flattened). Discrete: one-hot.
    MultiDiscrete: concatenated one-hots. MultiBinary: 0/1, flattened (an ``(n, m)``
    space gives ``n * m`` features). Dict -> dict, Tuple -> tuple.
    """
    if isinstance(space, spaces.Dict):
        if not isinstance(obs, Mapping):
            raise TypeError(f"a Dict space's observation must be a mapping, got {type(obs)}")
        return {k: preprocess(obs[k], sub, device, dtype) for k, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        if isinstance(obs, Mapping) or not isinstance(obs, Iterable):
            raise TypeError(f"a Tuple space's observation must be a sequence, got {type(obs)}")
        parts = zip(obs, space.spaces, strict=True)
        return tuple(preprocess(o, sub, device, dtype) for o, sub in parts)
    x = torch.as_tensor(np.asarray(obs) if not torch.is_tensor(obs) else obs, device=device)
    if isinstance(space, spaces.Discrete):
        return _one_hot(x.reshape(-1) - int(space.start), space.n).to(dtype)
    if isinstance(space, spaces.MultiDiscrete):
        x = x.reshape(x.shape[0], -1) - torch.as_tensor(space.start, device=device).reshape(1, -1)
        nvec = np.asarray(space.nvec).reshape(-1)
        return torch.cat([_one_hot(x[:, i], n) for i, n in enumerate(nvec)], dim=1).to(dtype)
    x = x.to(dtype)
    if isinstance(space, spaces.Box) and is_image_space(space):
        # Byte pixels (Atari frames) reach the encoder in [0, 1], as the published Atari
        # agents feed them; the buffers keep the bytes (a quarter of float32's memory).
        return x / 255.0 if space.dtype == np.uint8 else x
    return x.reshape(x.shape[0], -1)  # vector Box and MultiBinary bits, flattened


# -- encoders ------------------------------------------------------------------------------
EncoderBuilder = Callable[[spaces.Space, int, Any], EvolvableModule]


def _vector_inputs(space: spaces.Space) -> int:
    if isinstance(space, (spaces.Dict, spaces.Tuple)) or is_image_space(space):
        raise TypeError(f"this encoder needs a vector observation space, got {space!r}")
    return flat_dim(space)


def _build_mlp(space: spaces.Space, latent: int, spec: MlpSpec) -> EvolvableModule:
    return MlpEncoder(_vector_inputs(space), latent, spec)


def _build_cnn(space: spaces.Space, latent: int, spec: CnnSpec) -> EvolvableModule:
    if not isinstance(space, spaces.Box) or not is_image_space(space):
        raise TypeError(f"a cnn encoder needs an image Box (C, H, W), got {space!r}")
    return EvolvableCNN(space.shape, latent, spec)


def _build_lstm(space: spaces.Space, latent: int, spec: LstmSpec) -> EvolvableModule:
    return EvolvableLSTM(_vector_inputs(space), latent, spec)


def _build_multi_input(space: spaces.Space, latent: int, spec: MultiInputSpec) -> EvolvableModule:
    if not isinstance(space, (spaces.Dict, spaces.Tuple)):
        raise TypeError(f"a multi-input encoder needs a Dict or Tuple space, got {space!r}")
    return EvolvableMultiInput(space, latent, spec)


def _build_simba(space: spaces.Space, latent: int, spec: SimbaSpec) -> EvolvableModule:
    return EvolvableSimBa(_vector_inputs(space), latent, spec)


#: Encoder spec class -> builder(observation_space, latent_dim, spec).
ENCODER_BUILDERS: dict[type[BaseModel], EncoderBuilder] = {
    MlpSpec: _build_mlp,
    CnnSpec: _build_cnn,
    LstmSpec: _build_lstm,
    MultiInputSpec: _build_multi_input,
    SimbaSpec: _build_simba,
}


def build_encoder(space: spaces.Space, latent_dim: int, spec: EncoderSpec) -> EvolvableModule:
    """The encoder that ``spec`` describes, for ``space``, with ``latent_dim`` outputs."""
    try:
        builder = ENCODER_BUILDERS[type(spec)]
    except KeyError:
        raise TypeError(f"no encoder builder for {type(spec).__name__}") from None
    return builder(space, latent_dim, spec)


def default_cnn_spec(shape: tuple[int, ...]) -> CnnSpec:
    """Strided convolutions that shrink the image before the flatten: with stride 1 an
    84x84 frame would feed a 200k-input linear layer (over a second per batch of 256)."""
    if min(shape[1:]) >= 36:  # Atari-sized frames: the classic 8/4 and 4/2 pair
        return CnnSpec(channel_size=[32, 64], kernel_size=[8, 4], stride_size=[4, 2])
    if min(shape[1:]) < 7:  # too small for two strided 3x3 layers (7 -> 3 -> 1)
        return CnnSpec(channel_size=[16], kernel_size=[3], stride_size=[1])
    return CnnSpec(channel_size=[32, 32], kernel_size=[3, 3], stride_size=[2, 2])


#: Encoder arch -> its default settings for an observation space (when a manifest
#: gives only the arch, or none: :func:`~agilerl.models.networks.infer_encoder_arch`).
DEFAULT_ENCODERS: dict[str, Callable[[spaces.Space], BaseModel]] = {
    "multiinput": lambda space: MultiInputSpec(),
    "cnn": lambda space: default_cnn_spec(space.shape),  # type: ignore[arg-type]
    "lstm": lambda space: LstmSpec(hidden_state_size=128, num_layers=2),
    "simba": lambda space: SimbaSpec(hidden_size=128, num_blocks=2),
    "mlp": lambda space: MlpSpec(hidden_size=[64, 64]),
}


def infer_encoder_spec(
    observation_space: spaces.Space, recurrent: bool = False, simba: bool = False
) -> MultiInputSpec | CnnSpec | LstmSpec | SimbaSpec | MlpSpec:
    """Default encoder spec for an observation space (used when a manifest gives no arch):
    the arch :func:`~agilerl.models.networks.infer_encoder_arch` picks, with its defaults."""
    arch = infer_encoder_arch(observation_space, recurrent=recurrent, simba=simba)
    return DEFAULT_ENCODERS[arch](observation_space)  # type: ignore[return-value]


# -- networks ------------------------------------------------------------------------------
class EvolvableNetwork(EvolvableModule, Generic[NetSpecT]):
    """Encoder + MLP head. Subclasses set :meth:`head_outputs` and :meth:`forward`; each
    names its spec class as the type argument (every network spec has the fields of
    :class:`~agilerl.models.networks.NetworkFields`)."""

    spec: NetSpecT
    encoder: EvolvableModule

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space | None,
        spec: NetSpecT,
    ) -> None:
        super().__init__(spec)
        self.observation_space = observation_space
        self.action_space = action_space
        self._check_spaces()
        if self.spec.random_seed is not None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(self.spec.random_seed)
                self._build()
        else:
            self._build()

    def constructor_args(self) -> tuple[spaces.Space, spaces.Space | None]:
        return (self.observation_space, self.action_space)

    def with_spec(self, spec: NetSpecT) -> EvolvableNetwork[NetSpecT]:
        """A new network of this class, spaces and settings built from ``spec`` (fresh
        weights): how a checkpoint's saved architecture is rebuilt."""
        return type(self)(*self.constructor_args(), spec)

    # hooks for subclasses
    def _check_spaces(self) -> None:
        pass

    def head_outputs(self) -> int:
        raise NotImplementedError

    def head_extra_inputs(self) -> int:
        """Head inputs placed before the latent (e.g. the action of a Q(s, a) network)."""
        return 0

    def _build(self) -> None:
        spec = self.spec
        self.encoder = build_encoder(self.observation_space, spec.latent_dim, spec.encoder_config)
        self.head = EvolvableMLP(
            self.head_extra_inputs() + spec.latent_dim, self.head_outputs(), spec.head_config
        )

    def preprocess(self, obs: Observation) -> EncoderInput:
        return preprocess(obs, self.observation_space, *self._device_dtype())

    def extract_features(self, obs: Observation) -> torch.Tensor:
        """Latent features of raw or preprocessed observations (batch first)."""
        return self.encoder(self.preprocess(obs))

    # -- mutations ----------------------------------------------------------------------
    def submodules(self) -> dict[str, EvolvableModule]:
        return {"encoder": self.encoder, "head": self.head}

    def stacking_parts(self) -> dict[str, nn.Module]:
        """The modules holding this network's parameters, by attribute name: what a
        cohort stacks (:mod:`agilerl.cohorts.stacking`). The evolvable submodules; a
        network with parameters elsewhere adds that module."""
        return dict(self.submodules())

    def _after_submodule_mutation(self, prefix: str, info: MutationInfo) -> None:
        key = "encoder_config" if prefix == "encoder" else "head_config"
        self.spec = respec(self.spec, **{key: self.submodules()[prefix].spec.model_dump()})

    def _resize_latent(self, new: int) -> None:
        self.spec = respec(self.spec, latent_dim=new)
        self.encoder.set_num_outputs(new)
        extra = self.head_extra_inputs()
        # Latent units come after the extra inputs, so growth appends zero columns.
        self.head.set_num_inputs(extra + new)

    @mutation("grow_latent")
    def grow_latent(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.latent_dim
        if old >= self.spec.max_latent_dim:
            return {}
        new = min(old + draw_step(rng, LATENT_STEPS), self.spec.max_latent_dim)
        self._resize_latent(new)
        return {"mutation": "grow_latent", "latent_dim": new, "old_dim": old}

    @mutation("shrink_latent")
    def shrink_latent(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.latent_dim
        if old <= self.spec.min_latent_dim:
            return {}
        new = max(old - draw_step(rng, LATENT_STEPS), self.spec.min_latent_dim)
        self._resize_latent(new)
        return {"mutation": "shrink_latent", "latent_dim": new, "old_dim": old}
