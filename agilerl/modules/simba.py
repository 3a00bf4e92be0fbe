"""Evolvable SimBa network (residual MLP blocks with pre-LayerNorm, arXiv:2410.09754).

Layout: ``Linear(in, h) -> [x + Linear(s*h, h)(ReLU(Linear(h, s*h)(LN(x))))] * num_blocks
-> LN -> Linear(h, out) -> output_activation``.

Exactness of growth:

* ``add_block`` is exact: the new block's last linear layer is zero, so it adds nothing.
* ``add_node`` (wider residual stream) is exact: the new stream dimensions carry the mean
  of the old ones, which leaves every LayerNorm's statistics as they were once its gains
  are rescaled (``keep_normalised_width``).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch
from torch import nn

from agilerl.models.networks import SimbaSpec
from agilerl.modules.base import (
    EvolvableModule,
    MutationInfo,
    draw_step,
    keep_normalised_width,
    layer_at,
    make_activation,
    mutation,
)

NODE_STEPS = (16, 32, 64)


class SimbaBlock(nn.Module):
    """Pre-LayerNorm residual feed-forward block."""

    def __init__(self, hidden: int, scale_factor: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, scale_factor * hidden)
        self.fc2 = nn.Linear(scale_factor * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class EvolvableSimBa(EvolvableModule):
    """SimBa residual network whose depth (blocks) and width (hidden_size) mutate."""

    #: Row by row through Linear and LayerNorm layers (residual blocks): runs stacked.
    stackable: ClassVar[bool] = True

    spec: SimbaSpec

    def __init__(self, num_inputs: int, num_outputs: int, spec: SimbaSpec) -> None:
        super().__init__(spec)
        self.num_inputs = int(num_inputs)
        self.num_outputs = int(num_outputs)
        self._build()

    def constructor_args(self) -> tuple[int, int]:
        return (self.num_inputs, self.num_outputs)

    def _build(self) -> None:
        spec = self.spec
        h = spec.hidden_size
        self.embed = nn.Linear(self.num_inputs, h)
        self.blocks = nn.ModuleList(
            SimbaBlock(h, spec.scale_factor) for _ in range(spec.num_blocks)
        )
        self.final_norm = nn.LayerNorm(h)
        self.out = nn.Linear(h, self.num_outputs)
        self.out_act = make_activation(spec.output_activation)

    def _block_list(self) -> list[SimbaBlock]:
        """The residual blocks, typed (a ``ModuleList`` types its items as bare modules)."""
        return [layer_at(self.blocks, i, SimbaBlock) for i in range(len(self.blocks))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        return self.out_act(self.out(self.final_norm(x)))

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer (overlapping weights kept)."""
        self.num_outputs = int(num_outputs)
        self._rebuild(None)

    @mutation("add_block")
    def add_block(self, rng: np.random.Generator) -> MutationInfo:
        if self.spec.num_blocks >= self.spec.max_blocks:
            return {}
        index = self.spec.num_blocks
        self._rebuild(rng, num_blocks=index + 1)
        with torch.no_grad():
            block = layer_at(self.blocks, index, SimbaBlock)
            block.fc2.weight.zero_()
            block.fc2.bias.zero_()
        return {"mutation": "add_block", "block": index}

    @mutation("remove_block")
    def remove_block(self, rng: np.random.Generator) -> MutationInfo:
        if self.spec.num_blocks <= self.spec.min_blocks:
            return {}
        self._rebuild(rng, num_blocks=self.spec.num_blocks - 1)
        return {"mutation": "remove_block", "block": self.spec.num_blocks}

    @mutation("add_node")
    def add_node(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.hidden_size
        if old >= self.spec.max_mlp_nodes:
            return {}
        new = min(old + draw_step(rng, NODE_STEPS), self.spec.max_mlp_nodes)
        self._rebuild(rng, hidden_size=new)
        inner = self.spec.scale_factor * old
        blocks = self._block_list()
        with torch.no_grad():
            for block in blocks:
                block.fc1.weight[:, old:] = 0.0
                block.fc2.weight[:, inner:] = 0.0  # new inner units write nothing
            # Every layer writing the residual stream, and every LayerNorm reading it.
            writers = [self.embed, *(block.fc2 for block in blocks)]
            norms = [*(block.norm for block in blocks), self.final_norm]
            keep_normalised_width(writers, norms, old, new)
            self.out.weight[:, old:] = 0.0
        return {"mutation": "add_node", "hidden_size": new, "old_size": old}

    @mutation("remove_node")
    def remove_node(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.hidden_size
        if old <= self.spec.min_mlp_nodes:
            return {}
        new = max(old - draw_step(rng, NODE_STEPS), self.spec.min_mlp_nodes)
        self._rebuild(rng, hidden_size=new)
        return {"mutation": "remove_node", "hidden_size": new, "old_size": old}
