"""Agent families: how the trainer sets up and runs each agent type.

A family is one package here (its environment side, memory, training turn, evaluation,
pre-flight and outputs) and one line in :data:`FAMILIES`; it is given a
:class:`~agilerl.families.context.RunContext`, never the trainer. See
:class:`~agilerl.families.base.Family` for what a family implements.
"""

from __future__ import annotations

from typing import Any

from agilerl.families.bandits.family import BanditFamily
from agilerl.families.base import Family
from agilerl.families.llm.family import LLMFamily
from agilerl.families.multi_agent.family import MultiAgentFamily
from agilerl.families.offline.family import OfflineFamily
from agilerl.families.single_agent.family import SingleAgentFamily
from agilerl.models.base import AgentType, AlgorithmNotAvailableError

#: Agent type -> its family. Adding a family is adding its package and a line here.
FAMILIES: dict[AgentType, Family] = {
    family.agent_type: family
    for family in (
        SingleAgentFamily(),
        MultiAgentFamily(),
        LLMFamily(),
        OfflineFamily(),
        BanditFamily(),
    )
}


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


__all__ = ["FAMILIES", "Family", "family_for"]
