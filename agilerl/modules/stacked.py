"""P copies of a module of one architecture run as one, by the module's own forward.

A module class declares whether P copies of it can run as one (``stackable``, on
:class:`~agilerl.modules.base.EvolvableModule`): they can when its forward works row by
row on ``(..., features)`` tensors through parameterised layers this module knows how to
batch (:data:`STACKED_LAYERS`: ``nn.Linear`` as one ``torch.baddbmm`` over ``(P, rows,
features)``, ``nn.LayerNorm`` with each copy's scale and shift; Rainbow's noisy layer adds
itself). :class:`StackedModule` is then a copy of the first module whose parameterised
layers are replaced by stacked ones; its *own* forward runs on ``(P, rows, features)``,
so an MLP, an MLP encoder, a noisy MLP and a SimBa network stack with no batched twin
written beside them. An LSTM, a CNN or a multi-input module declares it cannot (their
fused kernels take one set of weights, or their layers hold running statistics): their
agents train one at a time.

Inputs and outputs are flattened rows, agent ``p``'s the ``p``-th block of equal size.
The stacked parameters are listed in the module's own ``named_parameters`` order
(:attr:`StackedModule.names`), which is the order its agent's optimiser holds them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional


def _stacked(tensors: Sequence[torch.Tensor], trainable: bool) -> nn.Parameter:
    with torch.no_grad():
        return nn.Parameter(torch.stack([t.detach() for t in tensors]), requires_grad=trainable)


class StackedLayer(nn.Module):
    """P copies of one parameterised layer as one, on ``(P, rows, features)`` inputs: each
    of the layer's own parameters stacked under its own name."""

    #: Whether it stacks the layer's buffers (else a layer holding any cannot stack:
    #: running statistics are per agent).
    stacks_buffers: ClassVar[bool] = False

    def __init__(self, layers: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__()
        self.count = len(layers)
        self.param_names = [name for name, _ in layers[0].named_parameters(recurse=False)]
        for name in self.param_names:
            setattr(self, name, _stacked([getattr(layer, name) for layer in layers], trainable))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        # Straight to forward: a stacked layer is built for one cohort and holds no hooks,
        # and torch's call machinery costs about as much as a small layer's batched product.
        return self.forward(x)

    def write_back(self, layers: Sequence[nn.Module]) -> None:
        """Copy copy ``p``'s parameters into ``layers[p]``, in place."""
        with torch.no_grad():
            for name in self.param_names:
                stacked = getattr(self, name)
                for p, layer in enumerate(layers):
                    getattr(layer, name).copy_(stacked[p])

    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """A layer without noise draws nothing."""


class StackedLinear(StackedLayer):
    """``nn.Linear`` x P: ``x @ W_p^T + b_p`` for block ``p``, one ``baddbmm``."""

    weight: nn.Parameter  # (P, out, in)
    bias: nn.Parameter  # (P, out)

    def __init__(self, layers: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__(layers, trainable)
        # Held plainly too: nn.Module's attribute lookup costs a microsecond a call.
        self.pair = (self.weight, self.bias)

    def weights(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The weight and bias this forward uses (a noisy layer adds its noise)."""
        return self.pair

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.weights()
        return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


class StackedLayerNorm(StackedLayer):
    """``nn.LayerNorm`` x P: normalised as torch's, then each copy's scale and shift."""

    weight: nn.Parameter  # (P, features)
    bias: nn.Parameter

    def __init__(self, layers: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__(layers, trainable)
        # Held plainly too: nn.Module's attribute lookup costs a microsecond a call.
        self.affine = (self.weight, self.bias, float(layers[0].eps))  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale, shift, eps = self.affine
        normalised = functional.layer_norm(x, x.shape[-1:], eps=eps)
        return torch.addcmul(shift.unsqueeze(1), normalised, scale.unsqueeze(1))


#: Layer class -> how P copies of it run as one (exact classes). A module whose
#: parameterised layers are all here, and that declares itself ``stackable``, stacks.
STACKED_LAYERS: dict[type, type[StackedLayer]] = {
    nn.Linear: StackedLinear,
    nn.LayerNorm: StackedLayerNorm,
}


def _layers(module: nn.Module) -> list[tuple[str, nn.Module]]:
    """The submodules of ``module`` holding parameters or buffers of their own."""
    return [
        (name, layer)
        for name, layer in module.named_modules()
        if next(layer.parameters(recurse=False), None) is not None
        or next(layer.buffers(recurse=False), None) is not None
    ]


def can_stack(module: nn.Module) -> bool:
    """Whether P copies of ``module`` can run as one :class:`StackedModule`: its class
    declares it ``stackable`` and each of its layers with parameters or buffers has a
    stacked form (:data:`STACKED_LAYERS`) that holds them."""
    if not getattr(type(module), "stackable", False):
        return False
    for _, layer in _layers(module):
        stacked = STACKED_LAYERS.get(type(layer))
        if stacked is None:
            return False
        if not stacked.stacks_buffers and next(layer.buffers(recurse=False), None) is not None:
            return False
    return True


class StackedModule(nn.Module):
    """P copies of a stackable module (one architecture) as one (module docstring)."""

    def __init__(self, modules: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__()
        template = modules[0]
        self.count = len(modules)
        # The template's structure and code, its parameterised layers then replaced.
        self.module = copy.deepcopy(template)
        self.module.train(template.training)  # a mode-dependent layer acts as the agents'
        self.layers: dict[str, StackedLayer] = {}
        for name, layer in _layers(template):
            stacked = STACKED_LAYERS[type(layer)](
                [m.get_submodule(name) for m in modules], trainable
            )
            stacked.train(layer.training)
            parent, _, attribute = name.rpartition(".")
            holder = self.module.get_submodule(parent) if parent else self.module
            setattr(holder, attribute, stacked)
            self.layers[name] = stacked
        #: The copy's own forward (held plainly: looked up once, not every call).
        self.run = self.module.forward
        #: The agents' parameter names, in the module's own order, and the stacked
        #: tensors at the same positions.
        self.names = [name for name, _ in template.named_parameters()]
        self.stacked = [self._tensor(name) for name in self.names]

    def _tensor(self, name: str) -> nn.Parameter:
        layer, _, attribute = name.rpartition(".")
        return getattr(self.layers[layer], attribute)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.run(x.reshape(self.count, -1, x.shape[-1]))
        return out.reshape(-1, out.shape[-1])

    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """Agent ``agent``'s new noise sample in every noisy layer, in the module's order,
        drawn from ``generator`` (its own)."""
        for layer in self.layers.values():
            layer.reset_noise(agent, generator)

    def write_back(self, modules: Sequence[nn.Module]) -> None:
        """Copy agent ``p``'s parameters (and stacked buffers) into ``modules[p]``."""
        for name, layer in self.layers.items():
            layer.write_back([m.get_submodule(name) for m in modules])
