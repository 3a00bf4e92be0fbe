"""LLM-PPO's critic: a LoRA adapter of its own on the shared base model and a linear value
head on the last hidden state, giving a value per token.

The critic shares the frozen base weights with the actor (and with every agent of the
population, :class:`~agilerl.llm.adapters.SharedBase`); only its adapter and its head
train. To the family layer it is one network: its spec is the ``lora_config`` (as the
actor's), its state the adapter's tensors (``adapter.*``) and the head's (``head.*``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch

from agilerl.llm.adapters import LoraAdapter
from agilerl.models.networks import LoraConfigDict


class ValueCritic:
    """A critic adapter and its ``Linear(hidden -> 1)`` value head (see the module
    docstring). The head computes in float32 whatever the base model's dtype."""

    def __init__(self, adapter: LoraAdapter, hidden_size: int, device: str | torch.device) -> None:
        self.adapter = adapter
        self.head = torch.nn.Linear(hidden_size, 1, device=device, dtype=torch.float32)

    @property
    def spec(self) -> LoraConfigDict:
        return self.adapter.spec

    @property
    def name(self) -> str:
        """The adapter's name in the shared model."""
        return self.adapter.name

    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        """Values ``[rows, T]`` of the last hidden states ``[rows, T, hidden]``."""
        return self.head(hidden.float()).squeeze(-1)

    def parameters(self) -> list[torch.nn.Parameter]:
        return [*self.adapter.parameters(), *self.head.parameters()]

    def named_parameters(self) -> Iterator[tuple[str, torch.nn.Parameter]]:
        for key, param in self.adapter.named_parameters():
            yield f"adapter.{key}", param
        for key, param in self.head.named_parameters():
            yield f"head.{key}", param

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {key: param.detach() for key, param in self.named_parameters()}

    def load_state_dict(self, state: Mapping[str, torch.Tensor]) -> None:
        """Copy ``state`` (keys and shapes as :meth:`state_dict`'s) into the critic."""
        with torch.no_grad():
            for key, param in self.named_parameters():
                param.copy_(state[key])

    def with_spec(self, spec: LoraConfigDict) -> ValueCritic:
        """This critic, when ``spec`` is its own (an adapter's shape never mutates)."""
        self.adapter.with_spec(spec)
        return self

    def to(self, device: str | torch.device) -> ValueCritic:
        self.head.to(device)
        return self

    def mutation_methods(self) -> list[str]:
        return []
