"""The kinds of agent the spec layer knows, as data: one row per :class:`AgentType`.

What differs between single-agent, multi-agent, offline, bandit and LLM algorithms, as far
as specs and manifests are concerned, is written here once: the environment spec a
manifest's ``environment`` section is validated by, what its ``network`` section is, and
whether a replay buffer belongs to the run. Code reads a row; it never asks which kind an
algorithm is. Adding a kind of agent is adding a row (and its environment spec). (The
keyword arguments of the AgileRL-named training functions, which
:meth:`~agilerl.models.base.AlgorithmBase.get_training_kwargs` returns, are the engine's:
:mod:`agilerl.training.facade_kwargs`.)

Nothing here imports the engine, or the generated package: spec classes are named by their
schema title.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum


class AgentType(str, Enum):
    """Kind of agent an algorithm trains; selects the environment and training loop."""

    SingleAgent = "single_agent"
    MultiAgent = "multi_agent"
    LLMAgent = "llm_agent"
    OfflineAgent = "offline_agent"
    BanditAgent = "bandit_agent"


@dataclass(frozen=True)
class AgentKind:
    """What the spec layer knows about one kind of agent."""

    #: Title of the environment spec, by the algorithm's ``env_type`` (None: every
    #: algorithm of the kind trains in the same one).
    environment_specs: Mapping[str | None, str]
    #: Title of the spec of the manifest's ``network`` section.
    network_section: str
    #: Whether that section builds an encoder (``arch``, ``encoder_config``,
    #: ``squash_output``), checked against the encoder it selects.
    encoder: bool
    #: Whether every algorithm of the kind learns from a replay buffer (else only the
    #: off-policy ones do).
    replay_memory: bool

    def environment_spec(self, env_type: str | None) -> str:
        """Title of the environment spec an algorithm of this kind trains in."""
        return self.environment_specs[env_type]


#: Every kind of agent, by its type.
AGENT_KINDS: dict[AgentType, AgentKind] = {
    AgentType.SingleAgent: AgentKind(
        environment_specs={None: "GymEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=False,
    ),
    AgentType.MultiAgent: AgentKind(
        environment_specs={None: "PzEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=False,
    ),
    AgentType.OfflineAgent: AgentKind(
        environment_specs={None: "OfflineEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=True,
    ),
    AgentType.BanditAgent: AgentKind(
        environment_specs={None: "BanditEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=True,
    ),
    AgentType.LLMAgent: AgentKind(
        environment_specs={
            "reasoning": "LLMReasoningEnvSpec",
            "preference": "LLMPreferenceEnvSpec",
            "sft": "LLMSftEnvSpec",
        },
        network_section="FinetuningNetworkSpec",
        encoder=False,
        replay_memory=False,
    ),
}


def uses_replay_memory(agent_type: AgentType | None, off_policy: bool) -> bool:
    """Whether an algorithm of ``agent_type`` learns from a replay buffer."""
    kind = AGENT_KINDS.get(agent_type)  # type: ignore[arg-type]
    return bool(off_policy) or (kind is not None and kind.replay_memory)
