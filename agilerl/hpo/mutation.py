"""Mutations: after selection, each agent of the new generation may change.

One kind is drawn per agent from the relative weights of the mutation spec (zero weights
are dropped, the rest normalised): none, architecture (a depth change with probability
``new_layer_prob``, else a width change), parameters (weight noise), activation, or one
RL hyperparameter within its range. Before the first generation the whole population is
mutated once with "none" left out (``pretraining``), as AgileRL's training loops do, so
selection starts from a varied population. The algorithm applies the change
(:class:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm` mutation primitives), which keeps the
policy and its critics alike and rebuilds the optimisers when the networks changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from agilerl.algorithms.core.protocols import AgentT, MutableAgent
from agilerl.files import checkpoints

if TYPE_CHECKING:  # types only
    from agilerl.models import MutationSpec

KINDS = ("none", "architecture", "parameters", "activation", "rl_hp")


def _fmt(value: object) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


class Mutations:
    """The mutation operator of evolutionary HPO."""

    def __init__(
        self,
        no_mutation: float = 0.4,
        architecture: float = 0.2,
        new_layer_prob: float = 0.2,
        parameters: float = 0.2,
        activation: float = 0.0,
        rl_hp: float = 0.2,
        mutation_sd: float = 0.1,
        rand_seed: int | None = None,
    ) -> None:
        weights = np.array([no_mutation, architecture, parameters, activation, rl_hp], float)
        if (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"mutation weights must be >= 0 and not all zero, got {weights}")
        if not 0.0 <= new_layer_prob <= 1.0:
            raise ValueError(f"new_layer_prob must lie in [0, 1], got {new_layer_prob}")
        self.probabilities = weights / weights.sum()
        # Before training every agent changes: "none" is left out (no change at all when
        # it is the only kind with weight).
        changes = weights.copy()
        changes[KINDS.index("none")] = 0.0
        self.pretraining_probabilities = (
            changes / changes.sum() if changes.sum() > 0 else self.probabilities
        )
        self.new_layer_prob = float(new_layer_prob)
        self.mutation_sd = float(mutation_sd)
        self.rng = np.random.default_rng(rand_seed)

    @classmethod
    def from_spec(cls, spec: MutationSpec) -> Mutations:
        """From a :class:`~agilerl.models.hpo.MutationSpec`."""
        p = spec.probabilities
        return cls(
            no_mutation=p.no_mut,
            architecture=p.arch_mut,
            new_layer_prob=p.new_layer,
            parameters=p.params_mut,
            activation=p.act_mut,
            rl_hp=p.rl_hp_mut,
            mutation_sd=spec.mutation_sd,
            rand_seed=spec.rand_seed,
        )

    def mutation(
        self,
        population: list[AgentT] | Mapping[int, AgentT],
        skip_first: bool = False,
        pretraining: bool = False,
        unchanged: Mapping[int, str] | None = None,
    ) -> list[AgentT] | Mapping[int, AgentT]:
        """Mutate agents in place and record on each ``agent.mut`` what it received.
        ``population``: the agents by slot, a list or a mapping slot -> agent (the slots
        one process of a split population holds). ``unchanged``: slots the selection
        keeps from mutation, with why (recorded as ``None (why)``); ``skip_first`` is
        ``unchanged={0: "elite"}``. ``pretraining``: the mutation before the first
        generation, which never draws "none" (:attr:`pretraining_probabilities`).

        One number is drawn from the operator's generator per call; each slot's
        mutation then draws from a generator seeded by it and the slot, so what an
        agent receives depends on its slot alone, never on the agents mutated before
        it: processes holding different slots mutate exactly as one process would."""
        agents = population.items() if isinstance(population, Mapping) else enumerate(population)
        kept = dict(unchanged or {})
        if skip_first:
            kept[0] = "elite"
        base = int(self.rng.integers(2**63))
        probabilities = self.pretraining_probabilities if pretraining else self.probabilities
        for slot, agent in agents:
            if slot in kept:
                agent.mut = f"None ({kept[slot]})"
                continue
            rng = np.random.default_rng([base, slot])
            kind = KINDS[int(rng.choice(len(KINDS), p=probabilities))]
            agent.mut = self.apply(agent, kind, rng)
        return population

    def apply(self, agent: MutableAgent, kind: str, rng: np.random.Generator | None = None) -> str:
        """Apply one mutation of ``kind`` to ``agent``, drawing from ``rng`` (default: the
        operator's generator); returns its description."""
        rng = self.rng if rng is None else rng
        if kind == "architecture":
            layer = bool(rng.random() < self.new_layer_prob)
            names = agent.architecture_mutations(new_layer=layer) or agent.architecture_mutations()
            if not names:  # a pretrained LLM: its architecture is fixed
                return "None (fixed architecture)"
            # Try the candidates in random order: one the bounds forbid (removing the
            # last layer) changes nothing, so the next is tried instead.
            for i in rng.permutation(len(names)):
                if agent.mutate_architecture(names[i], int(rng.integers(2**31))):
                    return f"arch {names[i]}"
            return "None (architecture at its bounds)"
        if kind == "parameters":
            changed = agent.mutate_parameters(rng, self.mutation_sd)
            return f"params ({changed} weights)"
        if kind == "activation":
            info = agent.mutate_activation(rng)
            return f"act {info.get('activation', '?')}" if info else "None (fixed activation)"
        if kind == "rl_hp":
            change = agent.mutate_hyperparameter(rng)
            if change is None:
                return "None (no mutable hyperparameter)"
            name, old, new = change
            if new == old:
                # Scaled and clipped back to the value it had (a bound, or zero): nothing
                # changed, so it is recorded as no mutation ("None (...)", as for an
                # architecture at its bounds) and history and summaries count only real
                # changes. Another hyperparameter is not tried instead: that would take
                # further draws and change what seeded runs do.
                return f"None ({name} unchanged at {_fmt(old)})"
            return f"{name} {_fmt(old)}->{_fmt(new)}"
        return "None"

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any], where: str = "") -> None:
        """Restore the generator :meth:`state_dict` saved (checked first)."""
        checkpoints.require(state, {"rng": dict}, where)
        self.rng = checkpoints.generator_from_state(state["rng"], checkpoints.join(where, "rng"))
