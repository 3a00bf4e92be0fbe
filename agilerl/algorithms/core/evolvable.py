"""``EvolvableAlgorithm``: what every agent of every family shares.

A subclass declares its networks and optimisers as class attributes and builds them in
``__init__``; this base then provides, once for all algorithms:

* mutable hyperparameters with ranges (``hp_config``) and the four mutation primitives
  the HPO operator calls: architecture, activation, parameter noise, hyperparameter;
* rebuilding target networks and optimisers after the networks changed;
* metrics (steps trained, evaluation fitness, training scores);
* checkpoints (networks with their possibly mutated specs, optimiser states,
  hyperparameters, ranges, RNG state, metrics), :meth:`clone` and :meth:`load`.

What a family adds: what an agent is built from (:attr:`construction_layout`: one
observation and action space for :class:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm`, spaces
keyed by agent id for :class:`~agilerl.algorithms.core.multi_agent.MultiAgentRLAlgorithm`),
how it acts and how it is evaluated.

Subclass contract (see ``dqn.py``): name the spec class once, ``class DQN(RLAlgorithm,
spec=DQNSpec)``. The constructor's hyperparameter keywords and their defaults, their
validation, ``init_args`` and the mutation limits are derived from it
(:mod:`agilerl.algorithms.core.binding`): the constructor takes ``**options`` and passes
them on, and the base sets every hyperparameter as an attribute before the subclass's
body runs (refusing in :meth:`check_hyperparameters` what the schema cannot state). The
body then builds every network named in ``eval_networks`` and ``target_networks`` and
calls :meth:`finish_init`. Implement ``learn``, which returns a dict of the metrics named
in ``learn_metrics`` (the one metrics protocol of every family: the training loops
average it, the trackers log it).
"""

from __future__ import annotations

import copy
import inspect
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import torch
from pydantic import BaseModel, ValidationError

from agilerl.algorithms.core.binding import (
    bind_hyperparameters,
    bound_signature,
    hyperparameter_names,
)
from agilerl.algorithms.hyperparameters import RLParameter, default_range, parse_hp_config
from agilerl.algorithms.optim import FusedAdam
from agilerl.files import checkpoints
from agilerl.models.limits import hyperparameter_limits
from agilerl.networks.base import EvolvableNetwork
from agilerl.resources.meta_device import built_on_meta

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self needs Python 3.11

CHECKPOINT_KIND = "agent"

#: Mutation method names that add or remove depth; every other architecture mutation
#: changes widths (nodes, channels, kernels, latent size).
LAYER_MUTATIONS = frozenset({"add_layer", "remove_layer", "add_block", "remove_block"})
ACTIVATION_MUTATION = "change_activation"


def space_text(space: Any) -> str:
    """A Gymnasium space in a few characters, for an agent's ``repr``: a Box by its shape
    (``Box(4,)``; its own repr prints every bound), composite spaces by their parts."""
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        return f"Box{space.shape}"
    if isinstance(space, spaces.MultiDiscrete):
        return f"MultiDiscrete({space.nvec.tolist()})"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {space_text(v)}" for k, v in space.spaces.items()) + ")"
    if isinstance(space, spaces.Tuple):
        return "Tuple(" + ", ".join(space_text(part) for part in space.spaces) + ")"
    return repr(space)  # Discrete(2), MultiBinary(3): short already


def unique_parameters(modules: list[torch.nn.Module]) -> list[torch.nn.Parameter]:
    """Parameters of ``modules`` with shared ones (a shared encoder) listed once."""
    seen: set[int] = set()
    params = []
    for module in modules:
        for param in module.parameters():
            if id(param) not in seen:
                seen.add(id(param))
                params.append(param)
    return params


def perturb_weights(net: torch.nn.Module, rng: np.random.Generator, mutation_sd: float) -> int:
    """Perturb ``net``'s weight matrices as :meth:`EvolvableAlgorithm.mutate_parameters`
    describes; returns the number of entries changed."""
    gen = torch.Generator().manual_seed(int(rng.integers(2**63)))
    matrices = [p for n, p in net.named_parameters() if p.dim() == 2 and "norm" not in n]
    if not matrices:
        return 0
    chosen = [m for m in matrices if rng.random() < 0.5] or [
        matrices[int(rng.integers(len(matrices)))]
    ]
    changed = 0
    with torch.no_grad():
        for weight in chosen:
            flat = weight.view(-1)
            count = max(1, int(np.ceil(0.1 * flat.numel())))
            idx = torch.randperm(flat.numel(), generator=gen)[:count].to(flat.device)
            kind = torch.rand(count, generator=gen).to(flat.device)
            noise = torch.randn(count, generator=gen).to(flat)
            old = flat[idx]
            new = torch.where(
                kind < 0.05,
                old + noise * 10 * old.abs(),
                torch.where(kind < 0.10, noise, old + noise * mutation_sd * old.abs()),
            )
            flat[idx] = new.clamp(-1e6, 1e6)
            changed += count
    return changed


class EvolvableAlgorithm:
    """Base of every agent (see the module docstring for the contract)."""

    #: The generated spec class the algorithm is bound to (``class DQN(RLAlgorithm,
    #: spec=DQNSpec)``); a subclass naming none keeps its base's. Its limits bound every
    #: mutation range.
    spec: ClassVar[type[BaseModel] | None] = None
    #: Whether the constructor's hyperparameter keywords, defaults, validation and
    #: ``init_args`` are derived from :attr:`spec` too (every algorithm here; a user's
    #: class bound to a spec only for its mutation limits may set it False).
    binds_arguments: ClassVar[bool] = True
    #: Constructor hyperparameters no schema states: keyword arguments the class's own
    #: ``__init__`` takes and sets as attributes (CQN's ``alpha``); saved and restored
    #: with the spec's.
    extra_init_args: ClassVar[tuple[str, ...]] = ()
    #: Constructor hyperparameters: stored as attributes, saved, restored, cloned. Derived
    #: from the bound spec (its fields, ``hp_config`` aside, then :attr:`extra_init_args`);
    #: an algorithm bound to no spec lists its own.
    init_args: ClassVar[tuple[str, ...]] = ()
    #: Hyperparameters that mutate by default (with :func:`default_range`), if present.
    default_mutable: ClassVar[tuple[str, ...]] = ("lr", "batch_size", "learn_step")
    #: Trained networks, the policy first; architecture mutations replay across them.
    eval_networks: ClassVar[tuple[str, ...]] = ()
    #: Target network attribute -> the trained network it follows.
    target_networks: ClassVar[Mapping[str, str]] = {}
    #: Optimiser attribute -> (network attributes it trains, learning-rate attribute).
    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {}
    #: What :meth:`learn` reports: metric name -> what it measures. ``learn`` returns a
    #: dict of floats with these keys; the training loop averages them over a generation
    #: (:class:`agilerl.training.tracking.MeanMetrics`) into the history, the trackers
    #: (TensorBoard, W&B) and the fitness plot.
    learn_metrics: ClassVar[Mapping[str, str]] = {}
    #: The metric of :attr:`learn_metrics` the fitness plot draws as "the loss".
    main_loss: ClassVar[str | None] = None
    #: Whether agents of this algorithm may train together as a cohort
    #: (:mod:`agilerl.cohorts`): its learning step is its ``update`` on a view of P agents
    #: (:class:`~agilerl.algorithms.core.population.Population`) and the families' turns
    #: can run it on a stacked view. The first condition of
    #: :func:`~agilerl.cohorts.learners.can_join`, the one predicate the generation loop
    #: and the pre-flight ask. Subclasses inherit it: one whose learning step is not its
    #: ``update`` sets it back to False.
    learns_in_cohorts: ClassVar[bool] = False

    #: What the agent is built from besides its hyperparameters (constructor argument ->
    #: its type in a checkpoint): saved in :meth:`state_dict`, passed back on rebuild.
    construction_layout: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, spec: type[BaseModel] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if spec is not None:
            cls.spec = spec
        if cls.spec is not None and cls.binds_arguments:
            names = hyperparameter_names(cls.spec)
            cls.init_args = (*names, *(n for n in cls.extra_init_args if n not in names))
            # Read by inspect.signature / help(): the schema's defaults, not ``**options``.
            cls.__signature__ = bound_signature(cls, cls.spec)  # type: ignore[attr-defined]

    def __init__(
        self,
        index: int = 0,
        *,
        net_config: Any = None,
        device: str | torch.device = "cpu",
        accelerator: Any = None,
        seed: int | None = None,
        hp_config: Any = None,
        **hyperparameters: Any,
    ) -> None:
        """``hyperparameters``: the bound spec's (:attr:`spec`), each set as an attribute
        after it is checked; the schema's default for each one not given. ``hp_config``
        is kept for :meth:`finish_init`."""
        spec = type(self).spec
        if spec is not None and self.binds_arguments:
            # A spec stating ``seed`` (the LLM family's) names this argument: the agent's
            # seed is that hyperparameter, checked and defaulted by the schema.
            seeded = "seed" in spec.model_fields and seed is not None
            given = {**hyperparameters, "seed": seed} if seeded else hyperparameters
            bound = bind_hyperparameters(self.name, spec, given)
            for name, value in bound.items():
                setattr(self, name, value)
            seed = bound.get("seed", seed)
            self.check_hyperparameters()
        elif hyperparameters:
            name = next(iter(hyperparameters))
            raise TypeError(f"{self.name}() got an unexpected keyword argument {name!r}")
        self._given_hp_config = hp_config
        self.index = int(index)
        self.net_config = net_config
        self.accelerator = accelerator
        if accelerator is not None:
            device = accelerator.device
        self.device = torch.device(device)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        # Metrics: env steps trained, evaluation fitness history, training episode returns.
        self.steps = 0
        self.fitness: list[float] = []
        self.scores: list[float] = []
        self.mut = "None"
        self.hp_config: dict[str, RLParameter] = {}
        #: Steps the last evaluation took (counted in the run's env steps).
        self.eval_steps_taken = 0
        #: Whether the last evaluation's ``max_steps`` cut one of its episodes short.
        self.eval_cut = False
        #: The environment section the agent was trained on, if known; saved in its
        #: checkpoint, so ``agilerl evaluate`` can rebuild it.
        self.environment: dict[str, Any] | None = None

    def __repr__(self) -> str:
        """``PPO(observation_space=Box(4,), action_space=Discrete(2), steps=20480,
        fitness=[..., 475.6], device='cpu', index=0)``: what the agent acts on (the
        family's :meth:`_repr_fields`), how far it trained, its latest fitness (the
        count elided), where it runs and its index in the population."""
        fitness = self.fitness
        last = ", ".join(f"{value:.4g}" for value in fitness[-1:])
        fields = {
            **self._repr_fields(),
            "steps": str(self.steps),
            "fitness": f"[..., {last}]" if len(fitness) > 1 else f"[{last}]",
            "device": repr(str(self.device)),
            "index": str(self.index),
        }
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in fields.items())})"

    def _repr_fields(self) -> dict[str, str]:
        """What the agent acts on, as ``repr`` shows it first (name -> text); a family
        fills it in (spaces, agent ids, a base model)."""
        return {}

    def construction_state(self) -> dict[str, Any]:
        """The values of :attr:`construction_layout`, as saved and passed back."""
        return {name: getattr(self, name) for name in self.construction_layout}

    # -- to implement ---------------------------------------------------------------------
    def check_hyperparameters(self) -> None:
        """Hook: refuse what the schema cannot state about the hyperparameters, set as
        attributes by now (a comparison of two of them, a bound of this engine's). The
        schema's own types and bounds are checked already."""

    def learn(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        """One learning step; returns the :attr:`learn_metrics` it measured."""
        raise NotImplementedError

    def _link_networks(self) -> None:
        """Hook: restore links between networks (a shared encoder) after they were
        rebuilt, cloned or loaded. Nothing is linked by default."""

    def _unlink_networks(self) -> None:
        """Hook: give each network its own copy of anything shared, so a mutation can be
        replayed on every network independently (:meth:`_link_networks` undoes it)."""

    # -- construction helpers -------------------------------------------------------------
    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def policy(self) -> EvolvableNetwork:
        return getattr(self, self.eval_networks[0])

    def finish_init(self, hp_config: Any = None) -> None:
        """Last step of a subclass ``__init__``: targets, optimisers, mutable ranges
        (``hp_config``: the constructor's, unless given here)."""
        given = self.__dict__.pop("_given_hp_config", None)
        if hp_config is None:
            hp_config = given
        self._link_networks()
        for target, source in self.target_networks.items():
            if not hasattr(self, target):
                setattr(self, target, getattr(self, source).clone())
        self.build_optimizers()
        ranges = {
            name: default_range(getattr(self, name))
            for name in self.default_mutable
            if hasattr(self, name)
        }
        ranges.update(parse_hp_config(hp_config))
        for name, param in ranges.items():
            value = getattr(self, name, None)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                known = ", ".join(n for n in self.init_args if self._is_numeric(n))
                raise ValueError(
                    f"hp_config.{name}: {self.name} has no numeric hyperparameter {name!r} "
                    f"to mutate; mutable ones: {known}"
                )
            if not param.min <= param.max:
                raise ValueError(f"hp_config.{name}: min {param.min} is above max {param.max}")
        self.hp_config = self._within_limits(ranges)

    def _within_limits(self, ranges: dict[str, RLParameter]) -> dict[str, RLParameter]:
        """Each range narrowed to its hyperparameter's limits in the algorithm's schema
        (its bound :attr:`spec`), so no mutation can set a value the spec (or the
        constructor) would refuse."""
        spec = type(self).spec
        limits = {} if spec is None else hyperparameter_limits(spec)
        narrowed = {}
        for name, param in ranges.items():
            try:
                narrowed[name] = param.within(limits[name]) if name in limits else param
            except ValueError as err:
                raise ValueError(f"hp_config.{name}: {err}") from None
        return narrowed

    def _is_numeric(self, name: str) -> bool:
        value = getattr(self, name, None)
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    def build_optimizers(self) -> None:
        """(Re)create every optimiser over the current parameters of its networks."""
        for attr, (nets, lr_attr) in self.optimizer_specs.items():
            params = unique_parameters([getattr(self, n) for n in nets])
            # The fused kernel updates every parameter in one call: with small networks
            # the per-tensor Python loop of the default Adam dominated an update (1.7x),
            # and FusedAdam also skips torch's per-step bookkeeping (agilerl.algorithms.optim).
            lr = float(getattr(self, lr_attr))
            if self.device.type in ("cpu", "cuda"):
                optimizer = FusedAdam(params, lr=lr)
            else:
                optimizer = torch.optim.Adam(params, lr=lr)
            setattr(self, attr, optimizer)

    def networks_changed(self) -> None:
        """After an architecture change: relink, re-create target networks from the
        trained ones and rebuild the optimisers (their old state no longer fits)."""
        self._link_networks()
        for target, source in self.target_networks.items():
            setattr(self, target, getattr(self, source).clone())
        self.build_optimizers()

    def _sync_targets(self) -> None:
        """Copy trained weights into the target networks (same architecture)."""
        for target, source in self.target_networks.items():
            getattr(self, target).load_state_dict(getattr(self, source).state_dict())

    # -- mutation primitives (called by agilerl.hpo.Mutations) ---------------------------
    def architecture_mutations(self, new_layer: bool | None = None) -> list[str]:
        """The policy's architecture mutations: depth changes (``new_layer=True``),
        width changes (``False``) or both (None). Activation changes are not included."""
        names = [
            n for n in self.policy.mutation_methods() if n.split(".")[-1] != ACTIVATION_MUTATION
        ]
        if new_layer is None:
            return names
        return [n for n in names if (n.split(".")[-1] in LAYER_MUTATIONS) == new_layer]

    def _replay_mutation(self, name: str, seed: int) -> dict[str, Any]:
        """Apply mutation ``name`` to every trained network that has it, each with a fresh
        generator seeded ``seed``, so the policy and its critics change alike."""
        self._unlink_networks()
        info = self.policy.mutate(name, np.random.default_rng(seed))
        if not info:  # bounds forbid it: nothing changed, optimiser state is kept
            self._link_networks()
            return {}
        for attr in self.eval_networks[1:]:
            net = getattr(self, attr)
            if name in net.mutation_methods():
                net.mutate(name, np.random.default_rng(seed))
        self.networks_changed()
        return info

    def mutate_architecture(self, name: str, seed: int) -> dict[str, Any]:
        """Architecture mutation ``name`` (from :meth:`architecture_mutations`)."""
        return self._replay_mutation(name, seed)

    def mutate_activation(self, rng: np.random.Generator) -> dict[str, Any]:
        """Switch the activation of one of the policy's evolvable parts (replayed on the
        other networks). Returns ``{}`` when no part can change activation."""
        names = [
            n for n in self.policy.mutation_methods() if n.split(".")[-1] == ACTIVATION_MUTATION
        ]
        if not names:
            return {}
        return self._replay_mutation(names[int(rng.integers(len(names)))], int(rng.integers(2**31)))

    def mutate_parameters(self, rng: np.random.Generator, mutation_sd: float) -> int:
        """Perturb the policy's weight matrices: in a random half of them, 10% of the
        entries get noise (90% N(0, (sd·|w|)²), 5% N(0, (10·|w|)²), 5% reset to N(0, 1)).
        Target networks follow. Returns the number of entries changed."""
        changed = perturb_weights(self.policy, rng, mutation_sd)
        self._sync_targets()
        return changed

    def mutate_hyperparameter(self, rng: np.random.Generator) -> tuple[str, Any, Any] | None:
        """Scale one hyperparameter of ``hp_config`` within its range; a learning rate
        takes effect in its optimiser at once. Returns ``(name, old, new)``."""
        if not self.hp_config:
            return None
        names = sorted(self.hp_config)
        name = names[int(rng.integers(len(names)))]
        old = getattr(self, name)
        new = self.hp_config[name].mutate(old, rng)
        self.set_hyperparameter(name, new)
        return name, old, new

    def set_hyperparameter(self, name: str, value: Any) -> None:
        """Set hyperparameter ``name`` and make it take effect at once (a learning rate in
        its optimiser): what a mutation and a migrant adopting its new sub-population's
        hyperparameters (:mod:`agilerl.hpo.multi_frequency`) both do."""
        setattr(self, name, value)
        for attr, (_, lr_attr) in self.optimizer_specs.items():
            if lr_attr == name:
                for group in getattr(self, attr).param_groups:
                    group["lr"] = float(value)

    def mutable_hyperparameters(self) -> dict[str, Any]:
        """The current values of the hyperparameters evolution may change (``hp_config``)."""
        return {name: getattr(self, name) for name in sorted(self.hp_config or {})}

    def hyperparameters(self) -> dict[str, Any]:
        """Current values of the constructor hyperparameters (JSON-friendly)."""
        out = {}
        for name in self.init_args:
            value = getattr(self, name)
            out[name] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return out

    # -- checkpoints ----------------------------------------------------------------------
    def _network_attrs(self) -> list[str]:
        return [*self.eval_networks, *self.target_networks]

    def network_parameters(self) -> list[torch.nn.Parameter]:
        """Parameters of every network, targets included, shared ones listed once."""
        return unique_parameters([getattr(self, attr) for attr in self._network_attrs()])

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to rebuild this agent exactly (tensors on the CPU), as a tree
        :mod:`agilerl.files.checkpoints` stores (laid out as :data:`AGENT_LAYOUT`)."""
        networks = {}
        for attr in self._network_attrs():
            net = getattr(self, attr)
            networks[attr] = {
                "class": type(net).__name__,
                "spec": net.spec.model_dump(mode="json"),
                "spec_class": type(net.spec).__name__,
                "state": {k: v.detach().cpu().clone() for k, v in net.state_dict().items()},
            }
        state = {
            "kind": CHECKPOINT_KIND,
            "class": self.name,
            "index": self.index,
            **self.construction_state(),
            "hyperparameters": copy.deepcopy(self.hyperparameters()),
            "hp_config": {n: p.to_dict() for n, p in self.hp_config.items()},
            "networks": networks,
            "optimizers": {
                attr: copy.deepcopy(getattr(self, attr).state_dict())
                for attr in self.optimizer_specs
            },
            "rng": copy.deepcopy(self.rng.bit_generator.state),
            "metrics": {
                "steps": self.steps,
                "fitness": list(self.fitness),
                "scores": list(self.scores),
                "mut": self.mut,
            },
            "extra": self.extra_state(),
        }
        if self.environment is not None:
            state["environment"] = copy.deepcopy(self.environment)
        return state

    def extra_state(self) -> dict[str, Any]:
        """Hook: algorithm-specific state to checkpoint (e.g. a learn counter)."""
        return {}

    def load_extra_state(self, state: dict[str, Any], where: str = "extra") -> None:
        """Hook: restore (after checking it) what :meth:`extra_state` saved."""
        checkpoints.require_keys(state, (), where, "extra state of this algorithm")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace this agent's state by :meth:`state_dict` output. The state is checked
        and a new agent built from it first, so a refused state changes nothing; the
        agent keeps its index, seed and accelerator."""
        fresh = type(self).from_state_dict(
            state, device=self.device, index=self.index, **self.runtime_args()
        )
        fresh.seed, fresh.accelerator = self.seed, self.accelerator
        self.__dict__.update(fresh.__dict__)

    def runtime_args(self) -> dict[str, Any]:
        """Hook: what this agent was built from that no checkpoint holds (an LLM agent's
        shared base model and tokenizer), passed to the constructor of its clones and of
        the agents rebuilt from its checkpoints. Nothing by default."""
        return {}

    @classmethod
    def from_state_dict(
        cls,
        state: dict[str, Any],
        device: str | torch.device = "cpu",
        index: int | None = None,
        where: str = "",
        sized: bool = False,
        **runtime: Any,
    ) -> Self:
        """A new agent built from :meth:`state_dict` output, checked before it is used:
        any problem is a :class:`~agilerl.files.checkpoints.CheckpointError` naming its key
        path (``where`` is prefixed, e.g. ``agents[0]``). ``runtime``: constructor
        arguments no checkpoint holds (:meth:`runtime_args`). ``sized``: the state is
        a live agent's (:meth:`clone`), whose sizes are allocated already, so they are
        not measured on the meta device first."""
        checkpoints.require(state, {**AGENT_LAYOUT, **cls.construction_layout}, where)
        if state["class"] != cls.__name__:
            raise checkpoints.fail(
                checkpoints.join(where, "class"), f"a {state['class']} agent, not a {cls.__name__}"
            )
        hyper = state["hyperparameters"]
        checkpoints.require_keys(
            hyper, cls.init_args, checkpoints.join(where, "hyperparameters"),
            f"a hyperparameter of {cls.__name__}",
        )  # fmt: skip
        arguments = {
            **{name: state[name] for name in cls.construction_layout},
            "index": state["index"] if index is None else index,
            "hp_config": state["hp_config"],
            **runtime,
            **hyper,
        }
        if cls.sized_on_meta and not sized:
            cls._check_sizes(arguments, state, where)
        agent = cls._built(arguments, device, where)
        agent._restore(state, where)
        return agent

    #: Whether a loaded agent is first built on the meta device, to check the sizes its
    #: file implies before anything is allocated (:meth:`_check_sizes`). An LLM agent's
    #: networks are adapters on the base model its run loads and sizes, so it is not.
    sized_on_meta: ClassVar[bool] = True

    @classmethod
    def _built(cls, arguments: dict[str, Any], device: str | torch.device, where: str) -> Self:
        """The agent the constructor builds from checked ``arguments`` on ``device``."""
        try:
            # The constructor checks hyperparameters and ranges as it does a manifest's.
            # A concrete algorithm's constructor also takes ``hp_config`` and its own
            # hyperparameters, which this base signature does not list.
            build = cast("Callable[..., Self]", cls)
            return build(**arguments, device=device)
        except (TypeError, ValueError, NotImplementedError, RuntimeError) as err:
            # RuntimeError: torch refusing a shape. (Sizes were checked on the meta
            # device first, so no layer here is beyond what the host can allocate.)
            raise checkpoints.fail(
                where, f"cannot rebuild the {cls.__name__} agent: {err}"
            ) from None

    @classmethod
    def _check_sizes(cls, arguments: dict[str, Any], state: dict[str, Any], where: str) -> None:
        """Build what a saved state implies on the meta device first (shapes, no
        storage): the networks the constructor makes from the recorded spaces and
        hyperparameters must fit in what this process may allocate
        (:func:`agilerl.files.checkpoints.payload_limit`), and every saved architecture must
        give exactly the weights the file holds, which the file's own size bounds. A
        ``Discrete(10**9)`` action space or a hidden size of 10**6 is refused here,
        naming its key path, before memory is allocated for it (not even reserved:
        :func:`~agilerl.resources.meta_device.built_on_meta`). Building on the meta device leaves
        torch's random generator as it was (it is put back)."""
        limit = checkpoints.payload_limit()
        with torch.random.fork_rng(devices=[]), built_on_meta():
            meta = cls._built(arguments, torch.device("meta"), where)
            counted: set[int] = set()  # a shared encoder is one allocation
            total = 0
            for attr in meta._network_attrs():
                for param in getattr(meta, attr).parameters():
                    if id(param) not in counted:
                        counted.add(id(param))
                        total += param.numel() * param.element_size()
                if limit is not None and total > limit:
                    raise checkpoints.fail(
                        checkpoints.join(checkpoints.join(where, "networks"), attr),
                        "built from the recorded spaces and hyperparameters, the networks up "
                        f"to this one need {checkpoints.size_text(total)}, more than this "
                        f"process may allocate ({checkpoints.size_text(limit)}: half the "
                        "memory available)",
                    )
            meta._restore_networks(state, where, load=False)

    def _restore(self, state: dict[str, Any], where: str) -> None:
        """Networks (their saved, possibly mutated, architectures), optimisers, RNG,
        metrics and extra state of a checked ``state``, onto this newly built agent."""
        self._restore_networks(state, where)
        self.build_optimizers()
        optimizers = state["optimizers"]
        checkpoints.require_keys(
            optimizers, list(self.optimizer_specs), checkpoints.join(where, "optimizers"),
            f"an optimiser of {self.name}",
        )  # fmt: skip
        for attr in self.optimizer_specs:
            optimizer = getattr(self, attr)
            at = checkpoints.join(checkpoints.join(where, "optimizers"), attr)
            _check_optimizer_state(optimizer, optimizers[attr], at)
            optimizer.load_state_dict(optimizers[attr])
        self.rng = checkpoints.generator_from_state(state["rng"], checkpoints.join(where, "rng"))
        metrics = state["metrics"]
        self.steps = checkpoints.require_count(
            metrics["steps"], checkpoints.join(where, "metrics.steps")
        )
        self.fitness = list(metrics["fitness"])
        self.scores = list(metrics["scores"])
        self.mut = metrics["mut"]
        self.load_extra_state(state["extra"], checkpoints.join(where, "extra"))
        self.environment = state.get("environment")

    def _restore_networks(self, state: dict[str, Any], where: str, load: bool = True) -> None:
        """Every network rebuilt from its saved architecture (with its saved weights
        where ``load``; else only checked against them, as on the meta device)."""
        networks = state["networks"]
        checkpoints.require_keys(
            networks, self._network_attrs(), checkpoints.join(where, "networks"),
            f"a network of {self.name}",
        )  # fmt: skip
        for attr in self._network_attrs():
            at = checkpoints.join(checkpoints.join(where, "networks"), attr)
            net = self._restored_network(attr, networks[attr], at, load)
            setattr(self, attr, net.to(self.device) if load else net)
        self._link_networks()

    def _restored_network(
        self, attr: str, saved: dict[str, Any], where: str, load: bool = True
    ) -> EvolvableNetwork:
        """Network ``attr`` rebuilt from its saved spec, of the class this agent builds,
        with saved weights whose names, shapes and dtypes match what the spec builds
        (loaded into it where ``load``)."""
        current = getattr(self, attr)
        for key, expected in (("class", current), ("spec_class", current.spec)):
            if saved[key] != type(expected).__name__:
                raise checkpoints.fail(
                    f"{where}.{key}", f"{saved[key]!r}, expected {type(expected).__name__!r}"
                )
        try:
            spec = type(current.spec).model_validate(saved["spec"])
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(map(str, (f"{where}.spec", *first["loc"])))
            raise checkpoints.fail(loc, first["msg"]) from None
        try:
            net = current.with_spec(spec)
        except (TypeError, ValueError, RuntimeError) as err:
            raise checkpoints.fail(f"{where}.spec", f"cannot build the network: {err}") from None
        weights = saved["state"]
        expected_weights = net.state_dict()
        checkpoints.require_keys(
            weights, list(expected_weights), f"{where}.state", "a weight of this network"
        )
        for name, tensor in expected_weights.items():
            checkpoints.require_tensor(
                weights[name], f"{where}.state.{name}", tuple(tensor.shape), tensor.dtype
            )
            checkpoints.require_finite(weights[name], f"{where}.state.{name}")
        if load:
            net.load_state_dict(weights)
        return net

    def save_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Write this agent to ``path`` (atomically)."""
        checkpoints.save(self.state_dict(), path)

    def load_checkpoint(self, path: str | os.PathLike[str]) -> None:
        """Replace this agent's state with the one saved at ``path`` (checked first: a
        refused file changes nothing)."""
        state = checkpoints.load(path, kind=CHECKPOINT_KIND)
        with checkpoints.restoring(path):
            self.load_state_dict(state)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], device: str | torch.device = "cpu"
    ) -> EvolvableAlgorithm:
        """The agent saved at ``path`` (``RLAlgorithm.load`` builds whichever algorithm
        the file holds; ``DQN.load`` insists on a DQN)."""
        state = checkpoints.load(path, kind=CHECKPOINT_KIND)
        with checkpoints.restoring(path):
            return cls.class_of(state).from_state_dict(state, device=device)

    @classmethod
    def class_of(cls, state: Any, where: str = "") -> type[EvolvableAlgorithm]:
        """The algorithm class a saved agent state names: one this package defines (a
        file never names what is built) and a ``cls``; else a CheckpointError."""
        import agilerl.algorithms

        at = checkpoints.join(where, "class")
        name = state.get("class") if isinstance(state, dict) else None
        if name is None:
            raise checkpoints.fail(at, "missing")
        known = isinstance(name, str) and name in agilerl.algorithms.NAMES
        algo_cls = getattr(agilerl.algorithms, name) if known else None
        if algo_cls is None or not issubclass(algo_cls, cls):
            raise checkpoints.fail(at, f"a {name!r} agent, not a {cls.__name__}")
        return algo_cls

    def clone(self, index: int | None = None) -> Self:
        """An independent copy (networks, optimiser states, hyperparameters, metrics);
        ``index`` gives it a new population index."""
        twin = type(self).from_state_dict(
            self.state_dict(), device=self.device, index=index, sized=True, **self.runtime_args()
        )
        # A clone draws its own random numbers: same seed lineage, different stream.
        twin.rng = np.random.default_rng(self.rng.integers(2**63))
        return twin


#: The parts of an agent checkpoint and their types, checked before any is used (with
#: the family's :attr:`EvolvableAlgorithm.construction_layout`).
AGENT_LAYOUT = {
    "kind": str,
    "class": str,
    "index": int,
    "hyperparameters": checkpoints.MapOf(object),
    "hp_config": checkpoints.MapOf(
        {
            "min": float,
            "max": float,
            "grow_factor": checkpoints.Omittable(float),
            "shrink_factor": checkpoints.Omittable(float),
        }
    ),
    "networks": checkpoints.MapOf(
        {
            "class": str,
            "spec": checkpoints.MapOf(object),
            "spec_class": str,
            "state": checkpoints.MapOf(torch.Tensor),
        }
    ),
    "optimizers": checkpoints.MapOf({"state": dict, "param_groups": checkpoints.ListOf(dict)}),
    "rng": checkpoints.MapOf(object),
    "metrics": {
        "steps": int,
        "fitness": checkpoints.ListOf(float),
        "scores": checkpoints.ListOf(float),
        "mut": str,
    },
    "extra": checkpoints.MapOf(object),
    # Files written before agents recorded their environment have none.
    "environment": checkpoints.Omittable(checkpoints.MapOf(object)),
}


def _same_kind(saved: Any, fresh: Any) -> bool:
    """Whether a saved optimiser setting has the type of the fresh optimiser's."""
    if isinstance(fresh, bool) or fresh is None or isinstance(fresh, str):
        return type(saved) is type(fresh)
    if isinstance(fresh, (int, float)):
        return isinstance(saved, (int, float)) and not isinstance(saved, bool)
    if isinstance(fresh, (tuple, list)):
        return (
            isinstance(saved, (tuple, list))
            and len(saved) == len(fresh)
            and all(_same_kind(s, f) for s, f in zip(saved, fresh, strict=True))
        )
    return True


def _check_optimizer_state(optimizer: torch.optim.Optimizer, saved: Any, where: str) -> None:
    """``saved`` fits ``optimizer`` (built over the restored networks): the same parameter
    groups and settings, and per parameter the state an Adam step keeps, shaped like the
    parameter. torch's own load would accept a mismatch and fail at the next step."""
    fresh = optimizer.state_dict()
    groups = saved["param_groups"]
    if len(groups) != len(fresh["param_groups"]):
        raise checkpoints.fail(
            f"{where}.param_groups",
            f"{len(groups)} parameter groups, expected {len(fresh['param_groups'])}",
        )
    params: dict[int, torch.nn.Parameter] = {}
    for i, (group, expected) in enumerate(zip(groups, fresh["param_groups"], strict=True)):
        at = f"{where}.param_groups[{i}]"
        checkpoints.require_keys(group, list(expected), at, "an optimiser setting")
        for key, value in expected.items():
            if key != "params" and not _same_kind(group[key], value):
                raise checkpoints.fail(f"{at}.{key}", f"{group[key]!r} is not like {value!r}")
            checkpoints.require_finite(group[key], f"{at}.{key}")
        _check_settings(optimizer, group, at)
        found = group["params"]
        if not isinstance(found, list) or found != expected["params"]:
            found = f"{len(found)} parameters" if isinstance(found, list) else repr(found)
            raise checkpoints.fail(
                f"{at}.params", f"{found}, the network has {len(expected['params'])} parameters"
            )
        live = optimizer.param_groups[i]["params"]
        params.update(zip(expected["params"], live, strict=True))
    for key, entry in saved["state"].items():
        at = f"{where}.state[{key!r}]"
        if key not in params:
            raise checkpoints.fail(at, "state for a parameter the optimiser does not have")
        group = next(g for g in groups if key in g["params"])
        names = ADAM_STATE + (("max_exp_avg_sq",) if group.get("amsgrad") else ())
        if not isinstance(entry, dict):
            raise checkpoints.fail(at, f"expected a mapping, found {type(entry).__name__}")
        checkpoints.require_keys(entry, names, at, "Adam state")
        step = checkpoints.require_tensor(entry["step"], f"{at}.step", ())
        checkpoints.require_finite(step, f"{at}.step")
        if float(step) < 0:
            raise checkpoints.fail(f"{at}.step", f"{float(step)} is negative")
        for name in names[1:]:
            checkpoints.require_tensor(entry[name], f"{at}.{name}", tuple(params[key].shape))
            checkpoints.require_finite(entry[name], f"{at}.{name}")


def _check_settings(optimizer: torch.optim.Optimizer, group: dict[str, Any], where: str) -> None:
    """The saved numeric settings of a parameter group (lr, betas, eps, weight_decay)
    are ones torch's own optimiser class accepts: its constructor checks their ranges
    (``lr >= 0``, ``0 <= betas < 1``, ...), which loading a state dict skips."""
    torch_class = next(c for c in type(optimizer).__mro__ if c.__module__.startswith("torch.optim"))
    accepted = inspect.signature(torch_class).parameters
    numeric = (int, float, tuple, list)
    settings = {
        k: v
        for k, v in group.items()
        if k != "params" and k in accepted and isinstance(v, numeric) and not isinstance(v, bool)
    }
    try:
        torch_class([torch.zeros(1, requires_grad=True)], **settings)
    except (TypeError, ValueError) as err:
        problem = f"not a valid {torch_class.__name__} setting: {err}"
        raise checkpoints.fail(where, problem) from None


#: What torch's Adam keeps per parameter (plus ``max_exp_avg_sq`` with amsgrad).
ADAM_STATE = ("step", "exp_avg", "exp_avg_sq")
