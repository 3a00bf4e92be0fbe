"""The stacked view of a cohort: P agents' networks, targets and optimisers held as one
:class:`~agilerl.algorithms.core.population.Population`, and written back into the
agents when the cohort ends.

Everything is read from what the algorithm declares, never from its kind:

* every network of ``_network_attrs()`` (the trained ones, then the targets) becomes a
  :class:`~agilerl.cohorts.stacking.StackedNetwork`; a part one network shares with an
  earlier one (critics running the actor's encoder) is stacked once, owned by the first;
* every optimiser of ``optimizer_specs`` becomes a :class:`~agilerl.algorithms.optim.
  StackedAdam` over the stacked tensors of exactly the parameters the agent's own
  optimiser holds, in its order (so each agent's gradient clip adds its norms in the
  order it does alone), at each agent's own learning rate;
* the targets of ``target_networks`` pair position by position with their online
  networks' stacked tensors for one polyak update.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from agilerl.algorithms.core.population import Minimiser, Population, own_size
from agilerl.algorithms.optim import StackedAdam
from agilerl.cohorts.stacking import Stacked, StackedNetwork


class StackedPopulation(Population[Any]):
    """A :class:`Population` of P agents on stacked networks (a cohort: P > 1; a stacked
    view of one serves the tests that hold an agent's stacked update independent of the
    others'); :meth:`write_back` puts every agent's weights, target weights and optimiser
    state back into it."""

    stacked = True

    def __init__(self, agents: Sequence[Any]) -> None:
        template = agents[0]
        networks: dict[str, StackedNetwork] = {}
        parts: dict[int, Stacked] = {}  # id of the template's part -> its stacked module
        trainable = set(template.eval_networks)
        for name in template._network_attrs():
            own = getattr(template, name)
            shared = {
                part: parts[id(module)]
                for part, module in own.stacking_parts().items()
                if id(module) in parts
            }
            stacked = StackedNetwork(
                [getattr(agent, name) for agent in agents], name in trainable, shared
            )
            if name in trainable:
                for part, module in own.stacking_parts().items():
                    parts.setdefault(id(module), stacked.modules[part])
            networks[name] = stacked
        device = next(iter(networks.values())).parameters()[0].device
        optimizers: dict[str, Minimiser] = {
            name: _stacked_adam(agents, name, lr, networks)
            for name, (_, lr) in template.optimizer_specs.items()
        }
        targets: tuple[list[torch.Tensor], list[torch.Tensor]] = ([], [])
        for target, source in template.target_networks.items():
            targets[0].extend(networks[target].all_parameters())
            targets[1].extend(networks[source].all_parameters())
        running = {name: stacked.network for name, stacked in networks.items()}
        super().__init__(agents, running, optimizers, targets, device)
        self._stacked_networks = networks

    def reset_noise(self, name: str, p: int, generator: torch.Generator | None) -> None:
        assert generator is not None  # a stacked agent draws from its own generator
        self._stacked_networks[name].reset_noise(p, generator)

    def drawn(
        self,
        draw: Callable[[Any, tuple[int, ...]], np.ndarray],
        shape: tuple[int, ...],
        live: np.ndarray | None,
    ) -> np.ndarray:
        """Each learning agent's own draw for its own ``batch_size`` rows of its block;
        zeros for padding rows and for an agent not learning (it draws nothing)."""
        rows = shape[0] // self.count
        parts = [
            None
            if live is not None and not live[p]
            else draw(agent, (own_size(agent, rows), *shape[1:]))
            for p, agent in enumerate(self.agents)
        ]
        given = next(part for part in parts if part is not None)
        out = np.zeros((self.count, rows, *shape[1:]), dtype=given.dtype)
        for p, part in enumerate(parts):
            if part is not None:
                out[p, : part.shape[0]] = part
        return out.reshape(shape)

    def write_back(self) -> None:
        """Every agent's weights, target weights and optimiser state back into it."""
        for name, stacked in self._stacked_networks.items():
            stacked.write_back([getattr(agent, name) for agent in self.agents])
        for name, adam in self.optimizers.items():
            assert isinstance(adam, StackedAdam)
            adam.write_back([getattr(agent, name) for agent in self.agents])


def _stacked_adam(
    agents: Sequence[Any], optimizer: str, lr: str, networks: dict[str, StackedNetwork]
) -> StackedAdam:
    """A stacked Adam over the parameters agent optimisers ``optimizer`` hold, in their
    order, read from each agent's at its own ``lr``."""
    owners: dict[int, tuple[nn.Parameter, int]] = {}  # id of an agent's own -> stacked, index
    for name, stacked in networks.items():
        for p, agent in enumerate(agents):
            own = stacked.agent_parameters(getattr(agent, name))
            for tensor, param in zip(stacked.parameters(), own, strict=True):
                owners[id(param)] = (tensor, p)
    own = [list(getattr(agent, optimizer).param_groups[0]["params"]) for agent in agents]
    params = [owners[id(param)][0] for param in own[0]]
    return StackedAdam(
        params,
        own,
        [getattr(agent, optimizer) for agent in agents],
        [getattr(agent, lr) for agent in agents],
    )
