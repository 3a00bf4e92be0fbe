"""What the generation loop, selection and mutation need of an agent, as protocols.

The loop (:func:`agilerl.training.evolution.evolve`), tournament selection and the
mutation operator are typed against these, not against a family's base class: any
agent that has these members evolves, whichever family it belongs to.
:class:`~agilerl.algorithms.core.evolvable.EvolvableAlgorithm` provides all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self needs Python 3.11

AgentT = TypeVar("AgentT", bound="EvolvingAgent")


@runtime_checkable
class SelectableAgent(Protocol):
    """What tournament selection reads and makes: fitness, index, a clone."""

    index: int
    fitness: list[float]

    def clone(self, index: int | None = None) -> Self: ...


@runtime_checkable
class MutableAgent(Protocol):
    """The four mutation primitives :class:`agilerl.hpo.Mutations` calls, the setter a
    migrant adopts hyperparameters by, and where it records what an agent received
    (``mut``)."""

    mut: str

    def architecture_mutations(self, new_layer: bool | None = None) -> list[str]: ...

    def mutate_architecture(self, name: str, seed: int) -> dict[str, Any]: ...

    def mutate_activation(self, rng: np.random.Generator) -> dict[str, Any]: ...

    def mutate_parameters(self, rng: np.random.Generator, mutation_sd: float) -> int: ...

    def mutate_hyperparameter(self, rng: np.random.Generator) -> tuple[str, Any, Any] | None: ...

    def set_hyperparameter(self, name: str, value: Any) -> None: ...

    def mutable_hyperparameters(self) -> dict[str, Any]: ...


@runtime_checkable
class EvolvingAgent(SelectableAgent, MutableAgent, Protocol):
    """An agent the generation loop can train, evaluate, select, mutate and checkpoint."""

    steps: int
    scores: list[float]
    rng: np.random.Generator
    hp_config: dict[str, Any]
    device: Any

    def hyperparameters(self) -> dict[str, Any]: ...

    def state_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_state_dict(
        cls, state: dict[str, Any], device: Any = "cpu", index: int | None = None, where: str = ""
    ) -> EvolvingAgent: ...
