"""Base of every evolvable module: a spec it owns, a mutation registry, weight-keeping rebuilds.

A module is built from its pydantic spec (``self.spec``, a private copy). Methods decorated
with :func:`mutation` are its mutations: :meth:`EvolvableModule.mutation_methods` lists them
by name and :meth:`EvolvableModule.mutate` runs one with a ``numpy.random.Generator``. A
mutation changes the spec (never the layers directly) and calls :meth:`EvolvableModule._rebuild`,
which re-creates every layer from the new spec and copies back each old weight into the
overlapping slice of its new home, so ``type(m)(*m.constructor_args(), m.spec)`` always builds
the same architecture as ``m``. Mutations that bounds forbid change nothing and return ``{}``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar, cast

import numpy as np
import torch
from pydantic import BaseModel
from torch import nn

MutationInfo = dict[str, Any]
F = TypeVar("F", bound=Callable[..., MutationInfo])
SpecT = TypeVar("SpecT", bound=BaseModel)
LayerT = TypeVar("LayerT", bound=nn.Module)

#: Activations a ``change_activation`` mutation may pick: AgileRL's default choice
#: (``Mutations(activation_selection=...)``, which its manifests cannot change). All are
#: elementwise, parameter-free and unbounded above, so switching keeps every weight and
#: changes a network's features less than a saturating one would.
SAFE_ACTIVATIONS = ("ReLU", "ELU", "GELU")


def mutation(name: str) -> Callable[[F], F]:
    """Register the decorated method as the mutation ``name`` of its module class."""

    def decorate(method: F) -> F:
        method._mutation_name = name  # type: ignore[attr-defined]
        return method

    return decorate


class GumbelSoftmax(nn.Module):
    """Soft Gumbel-softmax sample over the last dimension (differentiable)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.gumbel_softmax(x, tau=1.0, hard=False, dim=-1)


_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "Tanh": nn.Tanh,
    "GELU": nn.GELU,
    "ReLU": nn.ReLU,
    "ELU": nn.ELU,
    "LeakyReLU": nn.LeakyReLU,
    "Sigmoid": nn.Sigmoid,
    "Softplus": nn.Softplus,
    "Softmax": lambda: nn.Softmax(dim=-1),
    "GumbelSoftmax": GumbelSoftmax,
    "PReLU": nn.PReLU,
    "Identity": nn.Identity,
}


def make_activation(name: str | None) -> nn.Module:
    """The activation module named as in the specs' ``activation`` enum; None is identity."""
    if name is None:
        return nn.Identity()
    return _ACTIVATIONS[name]()


def respec(spec: SpecT, **changes: object) -> SpecT:
    """A validated copy of ``spec`` with ``changes`` applied (rules are checked again)."""
    return type(spec).model_validate({**spec.model_dump(), **changes})


def layer_at(layers: nn.ModuleList, index: int, kind: type[LayerT]) -> LayerT:
    """``layers[index]``, checked to be a ``kind``: a ``ModuleList`` types its items as
    bare ``nn.Module``, whose attributes (``weight``) read as ``Tensor | Module``."""
    layer = layers[index]
    if not isinstance(layer, kind):
        raise TypeError(f"layer {index} is a {type(layer).__name__}, not a {kind.__name__}")
    return layer


def overlap_copy(dst: torch.Tensor, src: torch.Tensor, centered: Iterable[int] = ()) -> None:
    """Copy the overlapping block of ``src`` into ``dst`` in place.

    Along every dimension the leading ``min`` entries are matched, except along the
    dimensions in ``centered`` (convolution kernels), where the two are centre-aligned.
    """
    if dst.dim() == 0 or dst.shape == src.shape:
        dst.copy_(src)
        return
    if dst.dim() != src.dim():
        return
    centered = set(centered)
    dst_idx, src_idx = [], []
    for dim, (d, s) in enumerate(zip(dst.shape, src.shape, strict=True)):
        n = min(d, s)
        if dim in centered:
            dst_idx.append(slice((d - n) // 2, (d - n) // 2 + n))
            src_idx.append(slice((s - n) // 2, (s - n) // 2 + n))
        else:
            dst_idx.append(slice(0, n))
            src_idx.append(slice(0, n))
    dst[tuple(dst_idx)] = src[tuple(src_idx)]


def keep_normalised_width(
    writers: list[nn.Linear], norms: list[nn.LayerNorm], old: int, new: int
) -> None:
    """Grow a LayerNorm-ed width from ``old`` to ``new`` features without changing what
    the norms compute (called after the rebuild, under ``no_grad``).

    ``writers`` are the linear layers producing the normalised features and ``norms`` the
    LayerNorms reading them. The new features compute the mean of the old ones, so every
    mean is unchanged and every variance shrinks by ``old / new``; scaling all the
    features by ``c = sqrt(new / old)`` restores the variance, so each normaliser (epsilon
    included) is exactly what it was, and dividing the old gains by ``c`` undoes the scale.
    New features normalise to exactly 0.
    """
    scale = (new / old) ** 0.5
    for linear in writers:
        linear.weight[old:] = linear.weight[:old].mean(dim=0)
        linear.bias[old:] = linear.bias[:old].mean()
        linear.weight *= scale
        linear.bias *= scale
    for norm in norms:
        norm.weight[:old] /= scale
        norm.weight[old:] = 1.0
        norm.bias[old:] = 0.0


def draw_step(rng: np.random.Generator, steps: tuple[int, ...]) -> int:
    """One of ``steps``, drawn by ``rng``."""
    return int(steps[int(rng.integers(len(steps)))])


class EvolvableModule(nn.Module):
    """An ``nn.Module`` built from a spec whose architecture can mutate."""

    #: Whether P copies of this module (one architecture) can run as one, by this
    #: module's own forward on stacked layers (:mod:`agilerl.modules.stacked`): true where
    #: the forward works row by row through layers that stack. A module that cannot
    #: leaves its agents training one at a time.
    stackable: ClassVar[bool] = False

    def __init__(self, spec: BaseModel) -> None:
        super().__init__()
        self.spec = spec.model_copy(deep=True)

    # -- to implement -----------------------------------------------------------------
    def _build(self) -> None:
        """(Re)create every layer from ``self.spec``, freshly initialised."""
        raise NotImplementedError

    def constructor_args(self) -> tuple[Any, ...]:
        """Positional constructor arguments before the spec (shapes, spaces)."""
        raise NotImplementedError

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer, keeping the overlapping weights (every encoder can:
        a network resizes its latent through it)."""
        raise NotImplementedError(f"{type(self).__name__} cannot resize its outputs")

    def submodules(self) -> dict[str, EvolvableModule]:
        """Nested evolvable modules whose mutations are exposed as ``<prefix>.<name>``."""
        return {}

    def _after_submodule_mutation(self, prefix: str, info: MutationInfo) -> None:
        """Hook: a nested module mutated (update the spec, rebuild what depends on it)."""

    # -- registry ---------------------------------------------------------------------
    @classmethod
    def _own_mutations(cls) -> dict[str, str]:
        found: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                name = getattr(value, "_mutation_name", None)
                if name is not None:
                    found[name] = attr
        return found

    def mutation_methods(self) -> list[str]:
        """Names accepted by :meth:`mutate`, sorted."""
        names = list(self._own_mutations())
        for prefix, module in self.submodules().items():
            names += [f"{prefix}.{name}" for name in module.mutation_methods()]
        return sorted(names)

    def mutate(self, name: str, rng: np.random.Generator) -> MutationInfo:
        """Apply mutation ``name``; returns what changed, ``{}`` when bounds forbid it."""
        own = self._own_mutations()
        if name in own:
            return getattr(self, own[name])(rng)
        prefix, _, rest = name.partition(".")
        subs = self.submodules()
        if rest and prefix in subs:
            info = subs[prefix].mutate(rest, rng)
            if info:
                self._after_submodule_mutation(prefix, info)
                return {**info, "mutation": name}
            return {}
        raise KeyError(f"{type(self).__name__} has no mutation {name!r}")

    # -- rebuilding -------------------------------------------------------------------
    def _device_dtype(self) -> tuple[torch.device, torch.dtype]:
        for param in self.parameters():
            return param.device, param.dtype
        return torch.device("cpu"), torch.get_default_dtype()

    def _preserve(self, old: dict[str, torch.Tensor]) -> None:
        """Copy every old tensor into the overlapping slice of its new counterpart."""
        for key, new in self.state_dict().items():
            if key in old:
                overlap_copy(new, old[key])

    def _rebuild(
        self, rng: np.random.Generator | None, **changes: object
    ) -> dict[str, torch.Tensor]:
        """Apply ``changes`` to the spec, rebuild the layers and keep the old weights.

        Fresh parameters are drawn from a torch RNG seeded by ``rng`` (the global torch RNG
        is left untouched), so the same mutation with the same seed gives the same weights.
        Returns the old state dict (for mutation-specific fix-ups).
        """
        device, dtype = self._device_dtype()
        old = {key: value.detach().clone() for key, value in self.state_dict().items()}
        new_spec = respec(self.spec, **changes) if changes else self.spec
        seed = int(rng.integers(2**31 - 1)) if rng is not None else None
        with torch.random.fork_rng(devices=[]):
            if seed is not None:
                torch.manual_seed(seed)
            self.spec = new_spec
            self._build()
        self.to(device=device, dtype=dtype)
        self.train(self.training)  # new layers follow the module's train/eval mode
        with torch.no_grad():
            self._preserve(old)
        return old

    def clone(self) -> EvolvableModule:
        """An independent copy: same spec, same weights."""
        # Every subclass takes its constructor_args() before the spec (the base takes the
        # spec alone), so the class is called as the general constructor it is.
        build = cast("Callable[..., EvolvableModule]", type(self))
        twin = build(*copy.deepcopy(self.constructor_args()), self.spec)
        twin.to(*self._device_dtype())
        twin.load_state_dict(self.state_dict())
        return twin


def init_linear(layer: nn.Linear | nn.Conv2d, gain: float = float(np.sqrt(2.0))) -> None:
    """Orthogonal weights, zero bias."""
    nn.init.orthogonal_(layer.weight, gain=gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
