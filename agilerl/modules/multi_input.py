"""Evolvable encoder for Dict and Tuple observation spaces (:class:`~agilerl.models.MultiInputSpec`).

Every image sub-space (a ``Box`` with three dimensions, channels first) gets its own
:class:`EvolvableCNN` (all built from ``cnn_config``) producing :data:`FEATURES_PER_IMAGE`
features. The other sub-spaces (``Box`` vectors, flattened; ``Discrete``/``MultiDiscrete``,
one-hot) are concatenated, or passed through one :class:`EvolvableMLP` (``mlp_config``,
:data:`VECTOR_FEATURES` outputs) when ``vector_space_mlp`` is set. The parts are
concatenated, mapped by ``Linear -> ReLU`` to ``latent_dim`` and by a last linear layer to
``num_outputs``.

Inputs are dicts (Dict spaces, keyed like the space) or tuples/lists (Tuple spaces) of
tensors already preprocessed to float (see :func:`agilerl.networks.preprocess`).

Mutations: ``grow_latent`` (exact: new latent units have zero outgoing weights) and
``shrink_latent``; the image encoders' mutations as ``cnn.<name>`` and the vector MLP's as
``mlp.<name>``. A ``cnn.*`` mutation is applied to every image encoder alike (same seed), so
``cnn_config`` keeps describing all of them; if it cannot be applied to all of them the same
way (images of different sizes), nothing changes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

from agilerl.models.networks import CnnSpec, MlpSpec, MultiInputSpec, is_image_space
from agilerl.modules.base import EvolvableModule, MutationInfo, draw_step, mutation, respec
from agilerl.modules.cnn import EvolvableCNN
from agilerl.modules.mlp import EvolvableMLP

FEATURES_PER_IMAGE = 32
VECTOR_FEATURES = 32
LATENT_STEPS = (8, 16, 32)

DEFAULT_CNN: dict[str, object] = {
    "channel_size": [16, 16],
    "kernel_size": [3, 3],
    "stride_size": [1, 1],
}
DEFAULT_MLP: dict[str, object] = {"hidden_size": [64]}

T = TypeVar("T")

#: A multi-input observation as the encoder reads it: a dict keyed like a Dict space, or
#: a tuple/list ordered like a Tuple space, of preprocessed float tensors.
MultiInputObs = Mapping[str, torch.Tensor] | Sequence[torch.Tensor]


def flat_dim(space: spaces.Space) -> int:
    """Size of a non-image sub-space once preprocessed to a flat float vector."""
    if isinstance(space, spaces.Box):
        return int(np.prod(space.shape))
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(np.sum(space.nvec))
    if isinstance(space, spaces.MultiBinary):
        return int(np.prod(space.shape))
    raise TypeError(f"unsupported observation sub-space {space!r}")


def _filled(value: T | None, field: str) -> T:
    """A sub-encoder's spec, which ``__init__`` fills in whenever the encoder is built."""
    if value is None:
        raise ValueError(f"MultiInputSpec.{field} is missing for the sub-spaces that need it")
    return value


def _image_shape(space: spaces.Space) -> tuple[int, ...]:
    if not isinstance(space, spaces.Box):
        raise TypeError(f"an image sub-space must be a Box, got {space!r}")
    return space.shape


def _subspaces(space: spaces.Space) -> list[tuple[str, spaces.Space]]:
    if isinstance(space, spaces.Dict):
        items = [(str(key), sub) for key, sub in space.spaces.items()]
    elif isinstance(space, spaces.Tuple):
        items = [(str(i), sub) for i, sub in enumerate(space.spaces)]
    else:
        raise TypeError(f"EvolvableMultiInput needs a Dict or Tuple space, got {space!r}")
    for key, sub in items:
        if isinstance(sub, (spaces.Dict, spaces.Tuple)):
            raise TypeError(f"nested Dict/Tuple sub-space {key!r} is not supported")
    return items


class EvolvableMultiInput(EvolvableModule):
    """Multi-input encoder whose latent width and sub-encoders mutate."""

    spec: MultiInputSpec
    cnns: nn.ModuleDict
    vector_mlp: EvolvableMLP | None
    latent: nn.Linear
    out: nn.Linear

    def __init__(
        self,
        observation_space: spaces.Dict | spaces.Tuple,
        num_outputs: int,
        spec: MultiInputSpec,
    ) -> None:
        super().__init__(spec)
        self.observation_space = observation_space
        self.num_outputs = int(num_outputs)
        self._items = _subspaces(observation_space)
        self.image_keys = [k for k, sub in self._items if is_image_space(sub)]
        self.vector_keys = [k for k, sub in self._items if not is_image_space(sub)]
        # Fill the defaults in, so the spec says exactly what was built.
        changes: dict[str, object] = {}
        if self.image_keys and self.spec.cnn_config is None:
            changes["cnn_config"] = CnnSpec.model_validate(DEFAULT_CNN).model_dump()
        if self.vector_keys and self.spec.vector_space_mlp and self.spec.mlp_config is None:
            changes["mlp_config"] = MlpSpec.model_validate(DEFAULT_MLP).model_dump()
        if changes:
            self.spec = respec(self.spec, **changes)
        self._build()

    def constructor_args(self) -> tuple[spaces.Space, int]:
        return (self.observation_space, self.num_outputs)

    def _vector_dim(self) -> int:
        return sum(flat_dim(sub) for k, sub in self._items if k in self.vector_keys)

    def _parts_dim(self) -> int:
        dim = FEATURES_PER_IMAGE * len(self.image_keys)
        if self.vector_keys:
            dim += VECTOR_FEATURES if self.spec.vector_space_mlp else self._vector_dim()
        return dim

    def _build(self) -> None:
        spec = self.spec
        subs = dict(self._items)
        self.cnns = nn.ModuleDict(
            {
                k: EvolvableCNN(
                    _image_shape(subs[k]),
                    FEATURES_PER_IMAGE,
                    _filled(spec.cnn_config, "cnn_config"),
                )
                for k in self.image_keys
            }
        )
        self.vector_mlp = (
            EvolvableMLP(
                self._vector_dim(), VECTOR_FEATURES, _filled(spec.mlp_config, "mlp_config")
            )
            if self.vector_keys and spec.vector_space_mlp
            else None
        )
        self.latent = nn.Linear(self._parts_dim(), spec.latent_dim)
        self.out = nn.Linear(spec.latent_dim, self.num_outputs)

    def _cnn(self, key: str) -> EvolvableCNN:
        """The image encoder of sub-space ``key`` (a ``ModuleDict`` types its items as
        bare modules)."""
        cnn = self.cnns[key]
        if not isinstance(cnn, EvolvableCNN):
            raise TypeError(f"image encoder {key!r} is a {type(cnn).__name__}")
        return cnn

    def _part(self, x: MultiInputObs, key: str) -> torch.Tensor:
        return x[key] if isinstance(x, Mapping) else x[int(key)]

    def forward(self, x: MultiInputObs) -> torch.Tensor:
        feats = [self.cnns[k](self._part(x, k)) for k in self.image_keys]
        if self.vector_keys:
            vec = torch.cat([self._part(x, k).flatten(start_dim=1) for k in self.vector_keys], 1)
            feats.append(self.vector_mlp(vec) if self.vector_mlp is not None else vec)
        return self.out(torch.relu(self.latent(torch.cat(feats, dim=1))))

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer (overlapping weights kept)."""
        self.num_outputs = int(num_outputs)
        self._rebuild(None)

    # -- nested mutations ---------------------------------------------------------------
    def submodules(self) -> dict[str, EvolvableModule]:
        subs: dict[str, EvolvableModule] = {}
        if self.image_keys:
            subs["cnn"] = self._cnn(self.image_keys[0])
        if self.vector_mlp is not None:
            subs["mlp"] = self.vector_mlp
        return subs

    def mutate(self, name: str, rng: np.random.Generator) -> MutationInfo:
        prefix, _, rest = name.partition(".")
        if prefix == "cnn" and rest and len(self.image_keys) > 1:
            return self._mutate_all_cnns(rest, rng)
        return super().mutate(name, rng)

    def _mutate_all_cnns(self, name: str, rng: np.random.Generator) -> MutationInfo:
        seed = int(rng.integers(2**63 - 1))
        backup = copy.deepcopy(self.cnns)
        infos = [self._cnn(k).mutate(name, np.random.default_rng(seed)) for k in self.image_keys]
        specs = [self._cnn(k).spec for k in self.image_keys]
        if (
            not infos[0]
            or any(info != infos[0] for info in infos)
            or any(s != specs[0] for s in specs)
        ):
            self.cnns = backup
            return {}
        self._after_submodule_mutation("cnn", infos[0])
        return {**infos[0], "mutation": f"cnn.{name}"}

    def _after_submodule_mutation(self, prefix: str, info: MutationInfo) -> None:
        sub = self.submodules()[prefix]
        key = "cnn_config" if prefix == "cnn" else "mlp_config"
        self.spec = respec(self.spec, **{key: sub.spec.model_dump()})

    # -- latent mutations ---------------------------------------------------------------
    @mutation("grow_latent")
    def grow_latent(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.latent_dim
        if old >= self.spec.max_latent_dim:
            return {}
        new = min(old + draw_step(rng, LATENT_STEPS), self.spec.max_latent_dim)
        self._rebuild(rng, latent_dim=new)
        with torch.no_grad():
            self.out.weight[:, old:] = 0.0
        return {"mutation": "grow_latent", "latent_dim": new, "old_dim": old}

    @mutation("shrink_latent")
    def shrink_latent(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.latent_dim
        if old <= self.spec.min_latent_dim:
            return {}
        new = max(old - draw_step(rng, LATENT_STEPS), self.spec.min_latent_dim)
        self._rebuild(rng, latent_dim=new)
        return {"mutation": "shrink_latent", "latent_dim": new, "old_dim": old}
