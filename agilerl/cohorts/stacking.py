"""P networks of one architecture held as one: parameters stacked along a leading
population dimension, one forward for all of them.

A network of this engine (``QNetwork``, an actor, a critic) is a composition of evolvable
modules (an encoder, a head, a learnt action spread:
:meth:`~agilerl.networks.base.EvolvableNetwork.stacking_parts`)
with code of its own around them (preprocessing, concatenating an action). A
:class:`StackedNetwork` stacks each module of P agents' networks into one
:data:`STACKED_MODULES` implementation (an MLP's layers become batched matrix products,
``torch.baddbmm`` over ``(P, rows, features)``) and runs the network's *own* ``forward``
with those in place of its modules: the code around them runs once for all P, unchanged.
Its input and output are flattened: agent ``p``'s rows are the ``p``-th block of equal
size, so an algorithm's code that indexes rows (``gather``, ``reshape(rows, -1)``) runs
unchanged on a cohort's batch. (``torch.func.vmap`` over ``functional_call`` does the same
for any module, but its per-call bookkeeping made a cohort's update of small MLPs about
ten times slower than the agents' own updates one after another.)

:meth:`StackedNetwork.write_back` copies the trained weights into the agents' own
modules, in place. :func:`bound` rebinds attributes for the length of a call, which is how
a network's forward and an algorithm's code are pointed at stacked parts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar, cast

import torch
from torch import nn
from torch.nn import functional

from agilerl.modules.mlp import EvolvableMLP
from agilerl.networks.base import EvolvableNetwork
from agilerl.networks.distributions import DiagGaussian, DiagGaussianDistribution
from agilerl.networks.rainbow import NoisyLinear, NoisyMLP, scaled_noise


def _stacked(tensors: Sequence[torch.Tensor], trainable: bool) -> nn.Parameter:
    with torch.no_grad():
        return nn.Parameter(torch.stack([t.detach() for t in tensors]), requires_grad=trainable)


class StackedMLP(nn.Module):
    """P :class:`~agilerl.modules.mlp.EvolvableMLP` (or encoder) modules of one layout as
    one module on flattened rows: ``Linear`` layers as ``baddbmm`` with each agent's
    weights, ``LayerNorm`` with each agent's scale and shift, activations as they are
    (they hold no parameters: :func:`stackable` checks)."""

    #: Whether it stacks the buffers of its modules (else :func:`stackable` refuses
    #: modules holding any: running statistics are per agent).
    stacks_buffers: ClassVar[bool] = False

    def __init__(self, modules: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__()
        # :data:`STACKED_MODULES` maps only MLP classes here.
        mlps = cast("Sequence[EvolvableMLP]", modules)
        self.count = len(mlps)
        first = mlps[0]
        self.train(first.training)  # a mode-dependent layer (noise) acts as the agents' do

        def linear(get: Any) -> tuple[nn.Parameter, nn.Parameter]:
            layers = [get(m) for m in mlps]
            return (
                _stacked([layer.weight for layer in layers], trainable),  # (P, out, in)
                _stacked([layer.bias for layer in layers], trainable),
            )

        def norm(get: Any) -> tuple[nn.Parameter, nn.Parameter, float] | None:
            layer = get(first)
            if isinstance(layer, nn.Identity):
                return None
            layers = [get(m) for m in mlps]
            return (
                _stacked([n.weight for n in layers], trainable),
                _stacked([n.bias for n in layers], trainable),
                float(layer.eps),
            )

        count = len(first.linears)
        self.layers = [
            (
                linear(lambda m, i=i: m.linears[i]),
                norm(lambda m, i=i: m.norms[i]),
                first.acts[i],
            )
            for i in range(count)
        ]
        self.layers.append((linear(lambda m: m.out), norm(lambda m: m.out_norm), first.out_act))
        # Registered, so the network's own code finds a device and dtype among them.
        self.stacked = nn.ParameterList(
            [t for (w, b), n, _ in self.layers for t in (w, b, *(n[:2] if n else ()))]
        )
        # The agents' parameters in the same order (and the same layout).
        self.names = [name for i in range(count + 1) for name in _layer_names(first, i, count)]

    def output_linear(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The output layer's stacked weight and bias as this forward uses them."""
        return self.layers[-1][0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(self.count, -1, x.shape[-1])
        last = len(self.layers) - 1
        for i, ((weight, bias), norm, act) in enumerate(self.layers):
            if i == last:
                weight, bias = self.output_linear()
            x = torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))
            if norm is not None:
                scale, shift, eps = norm
                x = torch.addcmul(
                    shift.unsqueeze(1),
                    functional.layer_norm(x, x.shape[-1:], eps=eps),
                    scale.unsqueeze(1),
                )
            x = act(x)
        return x.reshape(-1, x.shape[-1])

    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """A plain MLP holds no noise: nothing to draw."""

    def write_back(self, modules: Sequence[nn.Module]) -> None:
        with torch.no_grad():
            for p, mlp in enumerate(modules):
                own = dict(mlp.named_parameters())
                for name, stacked in zip(self.names, self.stacked, strict=True):
                    own[name].copy_(stacked[p])


class StackedNoisyMLP(StackedMLP):
    """P :class:`~agilerl.networks.rainbow.NoisyMLP` modules as one: a
    :class:`StackedMLP` whose output layer also holds each agent's noise scales
    (``weight_sigma``, ``bias_sigma``) and current noise sample, and in training mode
    adds ``sigma * epsilon`` to its weights as :class:`~agilerl.networks.rainbow.
    NoisyLinear` does. :meth:`reset_noise` draws one agent's new sample from that agent's
    generator, in the order its own layer draws it."""

    stacks_buffers: ClassVar[bool] = True
    weight_epsilon: torch.Tensor  # (P, out, in): each agent's current noise sample
    bias_epsilon: torch.Tensor  # (P, out)

    def __init__(self, modules: Sequence[nn.Module], trainable: bool) -> None:
        super().__init__(modules, trainable)
        outs = _noisy_outputs(modules)
        self.weight_sigma = _stacked([o.weight_sigma for o in outs], trainable)
        self.bias_sigma = _stacked([o.bias_sigma for o in outs], trainable)
        self.stacked.extend([self.weight_sigma, self.bias_sigma])
        self.names += ["out.weight_sigma", "out.bias_sigma"]
        with torch.no_grad():
            self.register_buffer("weight_epsilon", torch.stack([o.weight_epsilon for o in outs]))
            self.register_buffer("bias_epsilon", torch.stack([o.bias_epsilon for o in outs]))

    def output_linear(self) -> tuple[torch.Tensor, torch.Tensor]:
        weight, bias = super().output_linear()
        if not self.training:  # the mean layer, as NoisyLinear in eval mode
            return weight, bias
        return (
            weight + self.weight_sigma * self.weight_epsilon,
            bias + self.bias_sigma * self.bias_epsilon,
        )

    @torch.no_grad()
    def reset_noise(self, agent: int, generator: torch.Generator) -> None:
        """Agent ``agent``'s new noise sample, drawn from ``generator`` as its own
        :meth:`~agilerl.networks.rainbow.NoisyLinear.reset_noise` draws from torch's."""
        out_features, in_features = (int(n) for n in self.weight_epsilon.shape[1:])
        eps_in = scaled_noise(in_features, self.weight_epsilon, generator)
        eps_out = scaled_noise(out_features, self.weight_epsilon, generator)
        self.weight_epsilon[agent] = torch.outer(eps_out, eps_in)
        self.bias_epsilon[agent] = eps_out

    def write_back(self, modules: Sequence[nn.Module]) -> None:
        super().write_back(modules)
        with torch.no_grad():
            for p, out in enumerate(_noisy_outputs(modules)):
                out.weight_epsilon.copy_(self.weight_epsilon[p])
                out.bias_epsilon.copy_(self.bias_epsilon[p])


def _noisy_outputs(modules: Sequence[nn.Module]) -> list[NoisyLinear]:
    """The noisy output layers of P :class:`~agilerl.networks.rainbow.NoisyMLP`."""
    return [cast("NoisyLinear", cast("NoisyMLP", m).out) for m in modules]


def _layer_names(mlp: EvolvableMLP, i: int, hidden: int) -> list[str]:
    """The parameter names of layer ``i`` of ``mlp`` (``hidden`` hidden layers, then the
    output), in :class:`StackedMLP`'s order: linear weight, bias, then the norm's."""
    linear, norm = (f"linears.{i}", f"norms.{i}") if i < hidden else ("out", "out_norm")
    names = [f"{linear}.weight", f"{linear}.bias"]
    layer = mlp.norms[i] if i < hidden else mlp.out_norm
    if not isinstance(layer, nn.Identity):
        names += [f"{norm}.weight", f"{norm}.bias"]
    return names


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
Stacked = StackedMLP | StackedNoisyMLP | StackedGaussian

#: Module class -> its stacked implementation (exact classes: a subclass may compute
#: differently). A network whose parts are all here can be stacked.
STACKED_MODULES: dict[type, type[Stacked]] = {
    DiagGaussianDistribution: StackedGaussian,
    NoisyMLP: StackedNoisyMLP,
}


def _register() -> None:
    from agilerl.modules.mlp import MlpEncoder

    STACKED_MODULES.update({EvolvableMLP: StackedMLP, MlpEncoder: StackedMLP})


_register()


def stackable(network: Any) -> bool:
    """Whether P copies of ``network`` (of one architecture) can be stacked: every
    parameter lies in a part (:meth:`~agilerl.networks.base.EvolvableNetwork.
    stacking_parts`) of :data:`STACKED_MODULES`, no activation holds parameters, and no
    stacked part holds buffers (running statistics are per agent). Buffers of the
    network's own code around its parts (an actor's action bounds) are read from the
    template for all P: :func:`~agilerl.cohorts.learners.cohort_key` groups only
    networks whose buffers are equal (:func:`outside_buffers`)."""
    modules = network.stacking_parts() if hasattr(network, "stacking_parts") else {}
    if not modules or any(type(m) not in STACKED_MODULES for m in modules.values()):
        return False
    if any(
        not STACKED_MODULES[type(m)].stacks_buffers and next(m.buffers(), None) is not None
        for m in modules.values()
    ):
        return False
    covered = sum(p.numel() for m in modules.values() for p in m.parameters())
    if covered != sum(p.numel() for p in network.parameters()):
        return False
    return all(
        next(act.parameters(), None) is None
        for m in modules.values()
        for act in [*getattr(m, "acts", ()), *filter(None, [getattr(m, "out_act", None)])]
    )


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
            name: STACKED_MODULES[type(module)](
                [net.stacking_parts()[name] for net in networks], trainable
            )
            for name, module in self.template.stacking_parts().items()
            if name not in shared
        }
        self.modules = {
            name: shared[name] if name in shared else self.owned[name]
            for name in self.template.stacking_parts()
        }
        #: The template network with the stacked modules as its parts: the network's own
        #: code (forward, ``dist``, ``from_latent``, its buffers) run for all P agents.
        self.network = with_parts(self.template, self.modules)

    def __call__(self, *args: Any) -> Any:
        with self.bound():
            return self.template(*args)

    def call(self, method: str, *args: Any) -> Any:
        """The network's own ``method`` (``from_latent``, ...) run on the stacked modules."""
        with self.bound():
            return getattr(self.template, method)(*args)

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

    @contextmanager
    def bound(self) -> Iterator[None]:
        """The template network (the first agent's own) running on the stacked modules
        for the length of the block, for algorithm code that reaches into its networks'
        parts (``encoder``, ``head``, ``distribution``, ``from_latent``). A dotted
        part (``head.value``) is bound on the submodule that holds it."""
        with ExitStack() as stack:
            for name, module in self.modules.items():
                *path, attribute = name.split(".")
                holder = self.template.get_submodule(".".join(path)) if path else self.template
                stack.enter_context(bound(holder, **{attribute: module}))
            yield

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


@contextmanager
def bound(target: Any, **attributes: Any) -> Iterator[None]:
    """``target`` with ``attributes`` set for the length of the block, then put back (a
    network's forward or an algorithm's code pointed at a cohort's stacked parts and
    per-row hyperparameters). An attribute the instance did not hold itself (a method
    of its class) is removed again, so no bound method of the instance stays in it."""
    saved = {name: getattr(target, name) for name in attributes}
    inherited = {name for name in attributes if not _held(target, name)}
    try:
        for name, value in attributes.items():
            setattr(target, name, value)
        yield
    finally:
        for name, value in saved.items():
            if name in inherited:
                delattr(target, name)
            else:
                setattr(target, name, value)


def _held(target: Any, name: str) -> bool:
    """Whether ``target`` holds ``name`` itself (an instance attribute, or a module's
    registered submodule, parameter or buffer) rather than through its class."""
    if name in vars(target):
        return True
    registered = ("_modules", "_parameters", "_buffers")
    return isinstance(target, nn.Module) and any(name in vars(target)[r] for r in registered)
