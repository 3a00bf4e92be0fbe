"""P networks of one architecture held as one: parameters stacked along a leading
population dimension, one forward for all of them.

A network of this engine (``QNetwork``, an actor, a critic) is a composition of parts (an
encoder, a head, a learnt action spread: :meth:`~agilerl.networks.base.EvolvableNetwork.
stacking_parts`) with code of its own around them (preprocessing, concatenating an
action). A :class:`StackedNetwork` stacks each part of P agents' networks into one
(:func:`stack_part`): an evolvable module that declares it can run stacked runs its own
forward on stacked layers (:class:`~agilerl.modules.stacked.StackedModule`: an MLP's
layers become batched matrix products, ``torch.baddbmm`` over ``(P, rows, features)``),
and a part with parameters of its own has its form here (:data:`STACKED_PARTS`: a
Gaussian policy's ``log_std``). The stacked network is the first agent's network with
the stacked parts in place of its own (:func:`with_parts`): the code around them runs
once for all P, unchanged. Its input and output are flattened: agent ``p``'s rows are
the ``p``-th block of equal size, so an algorithm's code that indexes rows (``gather``,
``reshape(rows, -1)``) runs unchanged on a cohort's batch. (``torch.func.vmap`` over
``functional_call`` does the same for any module, but its per-call bookkeeping made a
cohort's update of small MLPs about ten times slower than the agents' own updates one
after another.)

:meth:`StackedNetwork.write_back` copies the trained weights into the agents' own
modules, in place.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, cast

import torch
from torch import nn

from agilerl.modules.stacked import StackedModule, can_stack
from agilerl.networks.base import EvolvableNetwork
from agilerl.networks.distributions import DiagGaussian, DiagGaussianDistribution


def _stacked(tensors: Sequence[torch.Tensor], trainable: bool) -> nn.Parameter:
    with torch.no_grad():
        return nn.Parameter(torch.stack([t.detach() for t in tensors]), requires_grad=trainable)


class StackedGaussian(nn.Module):
    """P Gaussian action distributions (:class:`~agilerl.networks.distributions.
    DiagGaussianDistribution`) as one: each agent's learnt ``log_std`` stacked ``(P,
    action_dim)`` and spread over its block of rows; sampling, log-probabilities and the
    conversions to actions are the distribution's own."""

    def __init__(self, modules: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__()
        gaussians = cast("Sequence[DiagGaussianDistribution]", modules)
        self.count = len(gaussians)
        self.template = gaussians[0]
        self.log_std = _stacked([g.log_std for g in gaussians], trainable)
        self.stacked = nn.ParameterList([self.log_std])
        self.names = ["log_std"]

    stacks_buffers: ClassVar[bool] = False

    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """A Gaussian's spread is learnt, not drawn: nothing to draw."""

    def forward(self, params: torch.Tensor, mask: Any = None) -> DiagGaussian:
        if mask is not None:
            return self.template(params, mask)  # refused there, with the distribution's words
        rows = params.shape[0] // self.count
        log_std = self.log_std.repeat_interleave(rows, dim=0)
        return DiagGaussian(params, log_std, self.template.shape, self.template.squash)

    def env_actions(self, sample: torch.Tensor) -> Any:
        return self.template.env_actions(sample)

    def actions(self, sample: torch.Tensor) -> torch.Tensor:
        return self.template.actions(sample)

    def samples(self, action: Any) -> torch.Tensor:
        return self.template.samples(action)

    def write_back(self, modules: Sequence[nn.Module]) -> None:
        with torch.no_grad():
            for p, gaussian in enumerate(cast("Sequence[DiagGaussianDistribution]", modules)):
                gaussian.log_std.copy_(self.log_std[p])


#: A stacked part of P networks.
Stacked = StackedModule | StackedGaussian

#: Parts that are not evolvable modules but hold parameters (exact classes), and how P
#: copies of each run as one.
STACKED_PARTS: dict[type, type[StackedGaussian]] = {
    DiagGaussianDistribution: StackedGaussian,
}


def stack_part(modules: Sequence[nn.Module], trainable: bool) -> Stacked:
    """P networks' part of one architecture as one: its table entry, or the module's own
    forward on stacked layers (:class:`~agilerl.modules.stacked.StackedModule`)."""
    form = STACKED_PARTS.get(type(modules[0]))
    if form is not None:
        return form(modules, trainable)
    return StackedModule(modules, trainable)


def stackable(network: Any) -> bool:
    """Whether P copies of ``network`` (of one architecture) can be stacked: every
    parameter lies in a part (:meth:`~agilerl.networks.base.EvolvableNetwork.
    stacking_parts`) that either has a form of its own (:data:`STACKED_PARTS`, holding no
    buffers) or is a module that declares it can run stacked
    (:func:`~agilerl.modules.stacked.can_stack`: an MLP, a noisy MLP, SimBa; not an
    LSTM, a CNN, batch norm). Buffers of the network's own code around its parts (an
    actor's action bounds) are read from the template for all P:
    :func:`~agilerl.cohorts.learners.cohort_key` groups only networks whose buffers are
    equal (:func:`outside_buffers`)."""
    modules = network.stacking_parts() if hasattr(network, "stacking_parts") else {}
    if not modules:
        return False
    for module in modules.values():
        if type(module) in STACKED_PARTS:
            if next(module.buffers(), None) is not None:
                return False
        elif not can_stack(module):
            return False
    covered = sum(p.numel() for m in modules.values() for p in m.parameters())
    return covered == sum(p.numel() for p in network.parameters())


def outside_buffers(network: EvolvableNetwork) -> list[torch.Tensor]:
    """The buffers of ``network`` outside its stacked parts: constants of the code around
    them (an actor's action bounds, a distributional network's atoms), which runs once for
    a cohort with the first agent's."""
    stacked = {id(b) for part in network.stacking_parts().values() for b in part.buffers()}
    return [b for b in network.buffers() if id(b) not in stacked]


class StackedNetwork:
    """The networks of P agents (same architecture) as one callable on flattened rows;
    see the module docstring.

    ``shared`` names stacked modules another :class:`StackedNetwork` of the cohort owns
    (an encoder the agents' critics share with their actors): this one runs them and
    leaves their parameters, and writing them back, to their owner."""

    def __init__(
        self,
        networks: Sequence[EvolvableNetwork],
        trainable: bool = True,
        shared: Mapping[str, Stacked] | None = None,
    ) -> None:
        self.count = len(networks)
        self.template = networks[0]
        shared = dict(shared or {})
        #: The submodules this network stacked itself (whose parameters it holds).
        self.owned = {
            name: stack_part([net.stacking_parts()[name] for net in networks], trainable)
            for name in self.template.stacking_parts()
            if name not in shared
        }
        self.modules = {
            name: shared[name] if name in shared else self.owned[name]
            for name in self.template.stacking_parts()
        }
        #: The template network with the stacked modules as its parts: the network's own
        #: code (forward, ``dist``, ``from_latent``, its buffers) run for all P agents.
        self.network = with_parts(self.template, self.modules)

    def parameters(self) -> list[nn.Parameter]:
        return [p for module in self.owned.values() for p in module.stacked]

    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """Agent ``agent``'s new noise sample in every part that holds noise, in the
        network's order, drawn from ``generator`` (the agent's own)."""
        for module in self.owned.values():
            module.reset_noise(agent, generator)

    def all_parameters(self) -> list[nn.Parameter]:
        """Every module's stacked parameters, shared ones included, in the network's
        order: what a target network of it (which shares nothing) holds, position by
        position."""
        return [p for module in self.modules.values() for p in module.stacked]

    def agent_parameters(self, network: EvolvableNetwork) -> list[nn.Parameter]:
        """``network``'s own parameters, in the order of :meth:`parameters` (the slice
        of each stacked tensor that is this agent's)."""
        found = []
        for name, module in self.owned.items():
            own = dict(network.stacking_parts()[name].named_parameters())
            found += [own[param] for param in module.names]
        return found

    def write_back(self, networks: Sequence[EvolvableNetwork]) -> None:
        """Copy agent ``p``'s weights into ``networks[p]`` (in place: the agents'
        optimisers keep pointing at the same tensors)."""
        for name, module in self.owned.items():
            module.write_back([net.stacking_parts()[name] for net in networks])


def with_parts(network: nn.Module, parts: Mapping[str, nn.Module]) -> Any:
    """A shallow copy of ``network`` whose submodules ``parts`` (dotted names: ``head.value``)
    are replaced, the holders along each path copied too: the rest (its other modules,
    parameters, buffers, settings) is shared with ``network``, which is left unchanged."""
    clone = copy.copy(network)
    clone._modules = dict(network._modules)
    nested: dict[str, dict[str, nn.Module]] = {}
    for name, module in parts.items():
        head, _, rest = name.partition(".")
        if rest:
            nested.setdefault(head, {})[rest] = module
        else:
            clone._modules[head] = module
    for head, inner in nested.items():
        holder = network._modules[head]
        assert holder is not None  # a part's holder is a submodule
        clone._modules[head] = with_parts(holder, inner)
    return clone
