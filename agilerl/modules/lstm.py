"""Evolvable LSTM built from an :class:`~agilerl.models.LstmSpec`.

Layout: ``nn.LSTM(input_size, hidden_state_size, num_layers, batch_first=True)`` and a linear
layer on the last time step's output. Input is ``(batch, time, features)`` or
``(batch, features)`` (one time step).

Exactness of growth:

* ``add_node`` is exact. PyTorch stacks the four gates (i, f, g, o) along the rows of each
  weight, so old weights are copied gate by gate. Every weight that *reads* a new hidden
  unit is zero (the new columns of ``weight_hh`` in every layer, of the next layer's
  ``weight_ih`` and of the output layer), so whatever the new units compute never reaches
  an old unit or the output. The new units' own input weights stay randomly initialised on
  purpose: had they been zero as well (so that the new cell state stays 0), the new units
  would output 0 forever and receive no gradient, i.e. never learn.
* ``add_layer`` (a new top layer) cannot be an identity map (gates are saturating), so it
  is not function-preserving; all old weights are kept.
"""

from __future__ import annotations

import re
from typing import ClassVar, cast

import numpy as np
import torch
from torch import nn

from agilerl.models.networks import LstmSpec
from agilerl.modules.base import EvolvableModule, MutationInfo, draw_step, mutation, overlap_copy

NODE_STEPS = (16, 32, 64)
_GATED = re.compile(r"^lstm\.(weight|bias)_(ih|hh)_l\d+$")


class EvolvableLSTM(EvolvableModule):
    """LSTM whose hidden state size and depth mutate."""

    #: torch's fused LSTM kernel takes one set of weights, and stacking it would replace
    #: that kernel by per-step batched products: its agents train one at a time.
    stackable: ClassVar[bool] = False

    spec: LstmSpec

    def __init__(self, input_size: int, num_outputs: int, spec: LstmSpec) -> None:
        super().__init__(spec)
        self.input_size = int(input_size)
        self.num_outputs = int(num_outputs)
        self._build()

    def constructor_args(self) -> tuple[int, int]:
        return (self.input_size, self.num_outputs)

    def _build(self) -> None:
        spec = self.spec
        self.lstm = nn.LSTM(
            self.input_size,
            spec.hidden_state_size,
            num_layers=spec.num_layers,
            batch_first=True,
            dropout=spec.dropout if spec.num_layers > 1 else 0.0,
        )
        self.out = nn.Linear(spec.hidden_state_size, self.num_outputs)

    def forward_with_state(
        self, x: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Output of the last time step and the next ``(h, c)`` (each layers x batch x H)."""
        if x.dim() == 2:
            x = x.unsqueeze(1)
        y, state = self.lstm(x, hidden)
        return self.out(y[:, -1]), state

    def forward(
        self, x: torch.Tensor, hidden: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        return self.forward_with_state(x, hidden)[0]

    def initial_state(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The zero ``(h, c)`` an episode starts from (each layers x batch x H), on the
        module's device; its size follows a mutated ``hidden_state_size`` / depth."""
        # nn.LSTM registers its weights by name at run time; the stubs read them through
        # Module.__getattr__ as ``Tensor | Module``.
        weight = cast(torch.Tensor, self.lstm.weight_hh_l0)
        shape = (self.spec.num_layers, int(batch), self.spec.hidden_state_size)
        zeros = torch.zeros(shape, device=weight.device, dtype=weight.dtype)
        return zeros, zeros.clone()

    def forward_sequence(
        self,
        x: torch.Tensor,
        hidden: tuple[torch.Tensor, torch.Tensor],
        resets: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """Outputs of every time step ``(batch, time, outputs)`` of sequences ``x``
        ``(batch, time, features)`` started from ``hidden``, and the final state.

        ``resets[b, t]`` (bool, ``(batch, time)``) zeroes sequence ``b``'s state before
        step ``t``: a new episode starts there. The LSTM runs in one call per stretch of
        time steps without any reset, so a batch of whole episodes costs one call.
        """
        cuts = [0, x.shape[1]]
        if resets is not None:
            cuts = sorted({0, x.shape[1], *torch.nonzero(resets.any(dim=0)).flatten().tolist()})
        h, c = hidden
        outputs = []
        for start, end in zip(cuts[:-1], cuts[1:], strict=True):
            if resets is not None:
                keep = (~resets[:, start]).to(h).reshape(1, -1, 1)
                h, c = h * keep, c * keep
            y, (h, c) = self.lstm(x[:, start:end], (h, c))
            outputs.append(y)
        y = outputs[0] if len(outputs) == 1 else torch.cat(outputs, dim=1)
        return self.out(y), (h, c)

    def _preserve(self, old: dict[str, torch.Tensor]) -> None:
        for key, new in self.state_dict().items():
            if key not in old:
                continue
            if _GATED.match(key):
                # (4H, ...) -> (4, H, ...): copy gate by gate.
                src = old[key].reshape(4, -1, *old[key].shape[1:])
                overlap_copy(new.view(4, -1, *new.shape[1:]), src)
            else:
                overlap_copy(new, old[key])

    def set_num_outputs(self, num_outputs: int) -> None:
        """Resize the output layer (overlapping weights kept)."""
        self.num_outputs = int(num_outputs)
        self._rebuild(None)

    @mutation("add_node")
    def add_node(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.hidden_state_size
        if old >= self.spec.max_hidden_state_size:
            return {}
        new = min(old + draw_step(rng, NODE_STEPS), self.spec.max_hidden_state_size)
        self._rebuild(rng, hidden_state_size=new)
        with torch.no_grad():
            for layer in range(self.spec.num_layers):
                getattr(self.lstm, f"weight_hh_l{layer}")[:, old:] = 0.0
                if layer > 0:
                    getattr(self.lstm, f"weight_ih_l{layer}")[:, old:] = 0.0
            self.out.weight[:, old:] = 0.0
        return {"mutation": "add_node", "hidden_state_size": new, "old_size": old}

    @mutation("remove_node")
    def remove_node(self, rng: np.random.Generator) -> MutationInfo:
        old = self.spec.hidden_state_size
        if old <= self.spec.min_hidden_state_size:
            return {}
        new = max(old - draw_step(rng, NODE_STEPS), self.spec.min_hidden_state_size)
        self._rebuild(rng, hidden_state_size=new)
        return {"mutation": "remove_node", "hidden_state_size": new, "old_size": old}

    @mutation("add_layer")
    def add_layer(self, rng: np.random.Generator) -> MutationInfo:
        if self.spec.num_layers >= self.spec.max_layers:
            return {}
        self._rebuild(rng, num_layers=self.spec.num_layers + 1)
        return {"mutation": "add_layer", "num_layers": self.spec.num_layers}

    @mutation("remove_layer")
    def remove_layer(self, rng: np.random.Generator) -> MutationInfo:
        if self.spec.num_layers <= max(self.spec.min_layers, 1):
            return {}
        self._rebuild(rng, num_layers=self.spec.num_layers - 1)
        return {"mutation": "remove_layer", "num_layers": self.spec.num_layers}
