"""Evolvable convolutional network built from a :class:`~agilerl.models.CnnSpec`.

Layout: ``[Conv2d (no padding) -> BatchNorm2d? -> activation] * n -> flatten -> Linear``.
Input is channels-first ``(C, H, W)`` (a leading batch dimension is required).

Exactness of growth:

* ``add_channel`` is exact (new channels get zero outgoing weights; BatchNorm is per
  channel, so the old channels' statistics do not move).
* ``add_layer`` appends a 1x1, stride-1 convolution initialised to the identity. It is exact
  when ``layer_norm`` is off and the activation is ReLU; otherwise a near-identity start.
* ``change_kernel`` keeps the centre of each old kernel but changes the feature map size, so
  the flatten layer's weights are kept only as an overlapping block (not function-preserving).
* ``change_activation`` swaps the activation after every convolution for another one of
  :data:`~agilerl.modules.base.SAFE_ACTIVATIONS` (as the MLP's does); every weight is kept, but
  the function changes.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn

from agilerl.models.networks import CnnSpec
from agilerl.modules.base import (
    SAFE_ACTIVATIONS,
    EvolvableModule,
    MutationInfo,
    draw_step,
    init_linear,
    layer_at,
    make_activation,
    mutation,
    overlap_copy,
)

CHANNEL_STEPS = (8, 16, 32)


def feature_map_sizes(
    input_hw: tuple[int, ...], kernels: list[int], strides: list[int]
) -> list[tuple[int, int]] | None:
    """Spatial size after each convolution (no padding); None if any is empty."""
    h, w = input_hw
    sizes = []
    for k, s in zip(kernels, strides, strict=True):
        h, w = (h - k) // s + 1, (w - k) // s + 1
        if h < 1 or w < 1 or k < 1:
            return None
        sizes.append((h, w))
    return sizes


class EvolvableCNN(EvolvableModule):
    """Conv2d stack whose depth, channels, kernel sizes and activation mutate."""

    #: Convolutions (and batch norm's running statistics) take one set of weights per
    #: kernel call: its agents train one at a time.
    stackable: ClassVar[bool] = False

    spec: CnnSpec

    def __init__(self, input_shape: tuple[int, ...], num_outputs: int, spec: CnnSpec) -> None:
        super().__init__(spec)
        if len(input_shape) != 3:
            raise ValueError(f"EvolvableCNN needs a (C, H, W) input shape, got {input_shape}")
        self.input_shape = tuple(int(d) for d in input_shape)
        self.num_outputs = int(num_outputs)
        if self._sizes(self.spec.kernel_size, self.spec.stride_size) is None:
            raise ValueError(
                f"kernels {self.spec.kernel_size} / strides {self.spec.stride_size} do not fit "
                f"an input of shape {self.input_shape}"
            )
        self._build()

    def constructor_args(self) -> tuple[tuple[int, ...], int]:
        return (self.input_shape, self.num_outputs)

    def _sizes(self, kernels: list[int], strides: list[int]) -> list[tuple[int, int]] | None:
        return feature_map_sizes(self.input_shape[1:], kernels, strides)

    def _last_map_size(self) -> tuple[int, int]:
        """(H, W) of the last convolution's feature map under the current spec."""
        sizes = self._sizes(self.spec.kernel_size, self.spec.stride_size)
        if sizes is None:
            raise ValueError(
                f"kernels {self.spec.kernel_size} / strides {self.spec.stride_size} do not fit "
                f"an input of shape {self.input_shape}"
            )
        return sizes[-1]

    def _build(self) -> None:
        spec = self.spec
        channels = [self.input_shape[0], *spec.channel_size]
        convs = [
            nn.Conv2d(a, b, kernel_size=k, stride=s)
            for a, b, k, s in zip(
                channels[:-1], channels[1:], spec.kernel_size, spec.stride_size, strict=True
            )
        ]
        self.convs = nn.ModuleList(convs)
        self.norms = nn.ModuleList(
            nn.BatchNorm2d(c) if spec.layer_norm else nn.Identity() for c in spec.channel_size
        )
        self.acts = nn.ModuleList(make_activation(spec.activation) for _ in spec.channel_size)
        h, w = self._last_map_size()
        self.out = nn.Linear(spec.channel_size[-1] * h * w, self.num_outputs)
        if spec.init_layers:
            for layer in [*convs, self.out]:
                init_linear(layer)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv, norm, act in zip(self.convs, self.norms, self.acts, strict=True):
            x = act(norm(conv(x)))
        return self.out(x.flatten(start_dim=1))

    def _preserve(self, old: dict[str, torch.Tensor]) -> None:
        for key, new in self.state_dict().items():
            if key in old:
                centered = (2, 3) if key.startswith("convs.") and new.dim() == 4 else ()
                overlap_copy(new, old[key], centered=centered)

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer (overlapping weights kept)."""
        self.num_outputs = int(num_outputs)
        self._rebuild(None)

    # -- mutations ----------------------------------------------------------------------
    @mutation("add_layer")
    def add_layer(self, rng: np.random.Generator) -> MutationInfo:
        spec = self.spec
        if len(spec.channel_size) >= spec.max_hidden_layers:
            return {}
        index = len(spec.channel_size)
        c = spec.channel_size[-1]
        self._rebuild(
            rng,
            channel_size=[*spec.channel_size, c],
            kernel_size=[*spec.kernel_size, 1],
            stride_size=[*spec.stride_size, 1],
        )
        with torch.no_grad():
            conv = layer_at(self.convs, index, nn.Conv2d)
            conv.weight.copy_(torch.eye(c, dtype=conv.weight.dtype).view(c, c, 1, 1))
            if conv.bias is not None:  # always built with a bias
                conv.bias.zero_()
            # The flatten layer sees the same (C, H, W) map as before: keep it exactly.
        return {"mutation": "add_layer", "layer": index, "channels": c, "kernel": 1}

    @mutation("remove_layer")
    def remove_layer(self, rng: np.random.Generator) -> MutationInfo:
        spec = self.spec
        if len(spec.channel_size) <= spec.min_hidden_layers:
            return {}
        self._rebuild(
            rng,
            channel_size=spec.channel_size[:-1],
            kernel_size=spec.kernel_size[:-1],
            stride_size=spec.stride_size[:-1],
        )
        return {"mutation": "remove_layer", "layer": len(spec.channel_size) - 1}

    @mutation("add_channel")
    def add_channel(self, rng: np.random.Generator) -> MutationInfo:
        spec = self.spec
        channels = list(spec.channel_size)
        room = [i for i, c in enumerate(channels) if c < spec.max_channel_size]
        if not room:
            return {}
        layer = room[int(rng.integers(len(room)))]
        old = channels[layer]
        channels[layer] = min(old + draw_step(rng, CHANNEL_STEPS), spec.max_channel_size)
        self._rebuild(rng, channel_size=channels)
        with torch.no_grad():
            if layer + 1 < len(channels):
                layer_at(self.convs, layer + 1, nn.Conv2d).weight[:, old:] = 0.0
            else:
                h, w = self._last_map_size()
                self.out.weight[:, old * h * w :] = 0.0  # channel-major flatten order
        return {"mutation": "add_channel", "layer": layer, "channels": channels[layer]}

    @mutation("remove_channel")
    def remove_channel(self, rng: np.random.Generator) -> MutationInfo:
        spec = self.spec
        channels = list(spec.channel_size)
        room = [i for i, c in enumerate(channels) if c > spec.min_channel_size]
        if not room:
            return {}
        layer = room[int(rng.integers(len(room)))]
        channels[layer] = max(
            channels[layer] - draw_step(rng, CHANNEL_STEPS), spec.min_channel_size
        )
        self._rebuild(rng, channel_size=channels)
        return {"mutation": "remove_channel", "layer": layer, "channels": channels[layer]}

    @mutation("change_kernel")
    def change_kernel(self, rng: np.random.Generator) -> MutationInfo:
        spec = self.spec
        options = []
        for layer, k in enumerate(spec.kernel_size):
            for new in (k - 2, k + 2):
                kernels = list(spec.kernel_size)
                kernels[layer] = new
                if new >= 1 and self._sizes(kernels, spec.stride_size) is not None:
                    options.append((layer, new))
        if not options:
            return {}
        layer, new = options[int(rng.integers(len(options)))]
        kernels = list(spec.kernel_size)
        old = kernels[layer]
        kernels[layer] = new
        self._rebuild(rng, kernel_size=kernels)
        return {"mutation": "change_kernel", "layer": layer, "kernel": new, "old_kernel": old}

    @mutation("change_activation")
    def change_activation(self, rng: np.random.Generator) -> MutationInfo:
        choices = [a for a in SAFE_ACTIVATIONS if a != self.spec.activation]
        new = choices[int(rng.integers(len(choices)))]
        self._rebuild(rng, activation=new)
        return {"mutation": "change_activation", "activation": new}
