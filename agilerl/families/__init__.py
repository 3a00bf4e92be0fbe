"""Agent families: how the trainer sets up and runs each agent type.

A family is one package here (its environment side, memory, training turn, evaluation,
pre-flight and outputs) and one line in :data:`FAMILIES`; it is given a
:class:`~agilerl.families.context.RunContext`, never the trainer. See
:class:`~agilerl.families.base.Family` for what a family implements.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from agilerl.models.base import AgentType, AlgorithmNotAvailableError

if TYPE_CHECKING:
    from agilerl.families.base import Family

#: Agent type -> its family class (``module:Class``). Adding a family is adding its
#: package and a line here. Each is imported on first use, so that a run loads its own
#: family's stack only: a CartPole run neither the LLM nor the multi-agent one.
FAMILY_CLASSES: dict[AgentType, str] = {
    AgentType.SingleAgent: "agilerl.families.single_agent.family:SingleAgentFamily",
    AgentType.MultiAgent: "agilerl.families.multi_agent.family:MultiAgentFamily",
    AgentType.LLMAgent: "agilerl.families.llm.family:LLMFamily",
    AgentType.OfflineAgent: "agilerl.families.offline.family:OfflineFamily",
    AgentType.BanditAgent: "agilerl.families.bandits.family:BanditFamily",
}


class FamilyTable(MutableMapping[AgentType, "Family"]):
    """Agent type -> its family, each built (its module imported) when first looked up
    and the same object after. A mapping like any other, so that a test can remove a row
    (``monkeypatch.delitem``) and put it back."""

    def __init__(self, classes: dict[AgentType, str]) -> None:
        self._rows: dict[AgentType, str | Family] = dict(classes)

    def __getitem__(self, agent_type: AgentType) -> Family:
        row = self._rows[agent_type]
        if isinstance(row, str):
            module, _, name = row.partition(":")
            row = self._rows[agent_type] = getattr(importlib.import_module(module), name)()
        from agilerl.families.base import Family

        assert isinstance(row, Family)  # the class a FAMILY_CLASSES line names
        return row

    def __setitem__(self, agent_type: AgentType, family: Family) -> None:
        self._rows[agent_type] = family

    def __delitem__(self, agent_type: AgentType) -> None:
        del self._rows[agent_type]

    def __iter__(self) -> Iterator[AgentType]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


#: Agent type -> its family (:class:`FamilyTable`).
FAMILIES = FamilyTable(FAMILY_CLASSES)


def family_for(algorithm: Any) -> Family:
    """The family of an algorithm spec (an instance or its class);
    :class:`AlgorithmNotAvailableError` naming ``algorithm`` for an agent type no family
    runs."""
    family = FAMILIES.get(algorithm.agent_type)
    if family is None:
        raise AlgorithmNotAvailableError(
            f"algorithm: {algorithm.name} is a {algorithm.agent_type.value} algorithm; "
            f"no family of this engine runs agent type {algorithm.agent_type}"
        )
    return family


def __getattr__(name: str) -> Any:
    # Family (and the engine it imports: torch, the training loop) loads on first use, so
    # that a light module of a family (``single_agent.vectorize``, ``families.environments``,
    # what ``agilerl validate`` imports) does not load the engine with this package.
    if name == "Family":
        from agilerl.families.base import Family

        return Family
    raise AttributeError(f"module 'agilerl.families' has no attribute {name!r}")


__all__ = ["FAMILIES", "FAMILY_CLASSES", "Family", "FamilyTable", "family_for"]
