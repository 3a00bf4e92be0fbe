"""Evolvable multi-layer perceptron built from an :class:`~agilerl.models.MlpSpec`.

Layout: ``[Linear -> LayerNorm? -> activation] * len(hidden_size) -> Linear -> output_activation``.
As a network's encoder (:class:`MlpEncoder`) the output layer ends like a hidden one.

Exactness of growth (outputs identical before and after, fixed weights):

* ``add_node`` is exact: new units get zero outgoing weights, and with ``layer_norm`` on they
  are set up so the grown LayerNorm keeps its statistics (see ``keep_normalised_width``).
* ``add_layer`` appends a layer initialised to the identity (zero bias). It is exact when
  ``layer_norm`` is off and the activation is ReLU (ReLU is idempotent on its own,
  non-negative output); otherwise it is a near-identity start and all old weights are kept.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn

from agilerl.models.networks import MlpSpec
from agilerl.modules.base import (
    SAFE_ACTIVATIONS,
    EvolvableModule,
    MutationInfo,
    draw_step,
    init_linear,
    keep_normalised_width,
    layer_at,
    make_activation,
    mutation,
)

NODE_STEPS = (16, 32, 64)


class EvolvableMLP(EvolvableModule):
    """MLP whose layers, widths and activation mutate."""

    #: Row by row through Linear and LayerNorm layers: runs stacked.
    stackable: ClassVar[bool] = True

    spec: MlpSpec

    def __init__(self, num_inputs: int, num_outputs: int, spec: MlpSpec) -> None:
        super().__init__(spec)
        self.num_inputs = int(num_inputs)
        self.num_outputs = int(num_outputs)
        self._build()

    def constructor_args(self) -> tuple[int, int]:
        return (self.num_inputs, self.num_outputs)

    def _build(self) -> None:
        spec = self.spec
        dims = [self.num_inputs, *spec.hidden_size]
        linears = [nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True)]
        self.linears = nn.ModuleList(linears)
        self.norms = nn.ModuleList(
            nn.LayerNorm(h) if spec.layer_norm else nn.Identity() for h in spec.hidden_size
        )
        self.acts = nn.ModuleList(make_activation(spec.activation) for _ in spec.hidden_size)
        self.out = nn.Linear(dims[-1], self.num_outputs)
        self.out_norm = self._output_norm()
        self.out_act = make_activation(self._output_activation())
        if spec.init_layers:
            for layer in [*linears, self.out]:
                init_linear(layer)
        # A LayerNorm on the output would undo the scale (same function, larger steps).
        if spec.output_vanish and isinstance(self.out_norm, nn.Identity):
            with torch.no_grad():
                self.out.weight.mul_(0.1)
                self.out.bias.mul_(0.1)

    def _output_norm(self) -> nn.Module:
        return nn.Identity()

    def _output_activation(self) -> str | None:
        return self.spec.output_activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Row by row, so P stacked copies run through it as one (agilerl.modules.stacked).
        # Layers are called as modules: their hooks fire (a bandit's gradient features
        # read its output layer's input through one).
        for linear, norm, act in zip(self.linears, self.norms, self.acts, strict=True):
            x = act(norm(linear(x)))
        return self.out_act(self.out_norm(self.out(x)))

    def set_num_inputs(self, num_inputs: int) -> None:
        """Resize the input (the first layer keeps its overlapping weights; new input columns
        are zero, so growing the input is exact)."""
        old = self.num_inputs
        self.num_inputs = int(num_inputs)
        self._rebuild(None)
        if num_inputs > old:
            with torch.no_grad():
                first = layer_at(self.linears, 0, nn.Linear)
                first.weight[:, old:] = 0.0

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer (overlapping weights kept; new outputs freshly initialised)."""
        self.num_outputs = int(num_outputs)
        self._rebuild(None)

    # -- mutations ----------------------------------------------------------------------
    @mutation("add_layer")
    def add_layer(self, rng: np.random.Generator) -> MutationInfo:
        hidden = list(self.spec.hidden_size)
        if len(hidden) >= self.spec.max_hidden_layers:
            return {}
        index = len(hidden)
        self._rebuild(rng, hidden_size=[*hidden, hidden[-1]])
        with torch.no_grad():
            new = layer_at(self.linears, index, nn.Linear)
            new.weight.copy_(torch.eye(hidden[-1], dtype=new.weight.dtype))
            new.bias.zero_()
        return {"mutation": "add_layer", "layer": index, "size": hidden[-1]}

    @mutation("remove_layer")
    def remove_layer(self, rng: np.random.Generator) -> MutationInfo:
        hidden = list(self.spec.hidden_size)
        if len(hidden) <= self.spec.min_hidden_layers:
            return {}
        self._rebuild(rng, hidden_size=hidden[:-1])
        return {"mutation": "remove_layer", "layer": len(hidden) - 1}

    @mutation("add_node")
    def add_node(self, rng: np.random.Generator) -> MutationInfo:
        hidden = list(self.spec.hidden_size)
        room = [i for i, h in enumerate(hidden) if h < self.spec.max_mlp_nodes]
        if not room:
            return {}
        layer = room[int(rng.integers(len(room)))]
        old = hidden[layer]
        hidden[layer] = min(old + draw_step(rng, NODE_STEPS), self.spec.max_mlp_nodes)
        self._rebuild(rng, hidden_size=hidden)
        consumer = (
            layer_at(self.linears, layer + 1, nn.Linear) if layer + 1 < len(hidden) else self.out
        )
        with torch.no_grad():
            consumer.weight[:, old:] = 0.0
            if self.spec.layer_norm:
                keep_normalised_width(
                    [layer_at(self.linears, layer, nn.Linear)],
                    [layer_at(self.norms, layer, nn.LayerNorm)],
                    old,
                    hidden[layer],
                )
        return {"mutation": "add_node", "layer": layer, "size": hidden[layer], "old_size": old}

    @mutation("remove_node")
    def remove_node(self, rng: np.random.Generator) -> MutationInfo:
        hidden = list(self.spec.hidden_size)
        room = [i for i, h in enumerate(hidden) if h > self.spec.min_mlp_nodes]
        if not room:
            return {}
        layer = room[int(rng.integers(len(room)))]
        old = hidden[layer]
        hidden[layer] = max(old - draw_step(rng, NODE_STEPS), self.spec.min_mlp_nodes)
        self._rebuild(rng, hidden_size=hidden)
        return {"mutation": "remove_node", "layer": layer, "size": hidden[layer], "old_size": old}

    @mutation("change_activation")
    def change_activation(self, rng: np.random.Generator) -> MutationInfo:
        choices = [a for a in SAFE_ACTIVATIONS if a != self.spec.activation]
        new = choices[int(rng.integers(len(choices)))]
        self._rebuild(rng, activation=new)
        return {"mutation": "change_activation", "activation": new}


class MlpEncoder(EvolvableMLP):
    """An :class:`EvolvableMLP` as a network's encoder, laid out as AgileRL builds one:
    the output layer (the latent) ends like a hidden layer, ``Linear -> LayerNorm (with
    layer_norm) -> output_activation``, and a null ``output_activation`` means the hidden
    ``activation`` (it follows activation mutations; ``Identity`` gives a linear latent).
    ``output_vanish`` applies only without ``layer_norm`` (the norm would undo it).

    Measured on AgileRL's DQN CartPole manifest, the previous layout (a linear latent
    scaled down by 0.1, straight into the head's first layer) learned far worse.
    """

    def _output_norm(self) -> nn.Module:
        return nn.LayerNorm(self.num_outputs) if self.spec.layer_norm else nn.Identity()

    def _output_activation(self) -> str | None:
        return self.spec.output_activation or self.spec.activation

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the latent; growth is exact (the grown output LayerNorm keeps its
        statistics and the new features normalise to 0, see ``keep_normalised_width``)."""
        old = self.num_outputs
        super().set_num_outputs(num_outputs)
        # The output norm is a LayerNorm exactly when the spec's layer_norm is on.
        if isinstance(self.out_norm, nn.LayerNorm) and num_outputs > old:
            with torch.no_grad():
                keep_normalised_width([self.out], [self.out_norm], old, self.num_outputs)
