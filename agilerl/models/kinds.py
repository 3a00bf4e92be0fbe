"""The kinds of agent the spec layer knows, as data: one row per :class:`AgentType`.

What differs between single-agent, multi-agent, offline, bandit and LLM algorithms, as far
as specs and manifests are concerned, is written here once: the environment spec a
manifest's ``environment`` section is validated by, what its ``network`` section is, whether
a replay buffer belongs to the run, and which keyword arguments the training loop gets
(:meth:`agilerl.models.base.AlgorithmBase.get_training_kwargs`). Code reads a row; it never
asks which kind an algorithm is. Adding a kind of agent is adding a row (and its
environment spec).

Nothing here imports the engine, or the generated package: spec classes are named by their
schema title.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any


class AgentType(str, Enum):
    """Kind of agent an algorithm trains; selects the environment and training loop."""

    SingleAgent = "single_agent"
    MultiAgent = "multi_agent"
    LLMAgent = "llm_agent"
    OfflineAgent = "offline_agent"
    BanditAgent = "bandit_agent"


@dataclass(frozen=True)
class TrainingKwarg:
    """One keyword argument of a training loop and where its value comes from.

    ``source`` is one of the arguments of ``get_training_kwargs`` (``training``,
    ``env_spec``, ``memory``, ``n_step_memory``) or ``spec`` (the algorithm spec itself);
    ``attribute`` is read from it (None: the source is the value). An ``optional`` one is
    read with None for a missing attribute and left out when None.
    """

    name: str
    source: str
    attribute: str | None = None
    optional: bool = False

    def read(self, sources: Mapping[str, Any]) -> Any:
        value = sources[self.source]
        if self.attribute is None:
            return value
        return (
            getattr(value, self.attribute, None)
            if self.optional
            else getattr(value, self.attribute)
        )


def training_kwargs(
    kwargs: tuple[TrainingKwarg, ...], sources: Mapping[str, Any]
) -> dict[str, Any]:
    """The keyword arguments ``kwargs`` describe, read from ``sources``, in their order."""
    found: dict[str, Any] = {}
    for kwarg in kwargs:
        value = kwarg.read(sources)
        if value is not None or not kwarg.optional:
            found[kwarg.name] = value
    return found


def _training(name: str, attribute: str | None = None, optional: bool = False) -> TrainingKwarg:
    return TrainingKwarg(name, "training", attribute or name, optional)


#: What every RL training loop is told: the run's names, evaluation and checkpoints.
RUN_KWARGS = (
    TrainingKwarg("env_name", "env_spec", "name"),
    TrainingKwarg("algo", "spec", "name"),
    _training("eval_steps"),
    _training("eval_loop"),
    _training("target", "target_score"),
    _training("checkpoint", "checkpoint_steps"),
    _training("checkpoint_path"),
    _training("overwrite_checkpoints"),
)
#: The replay buffer (off-policy, offline and bandit loops).
MEMORY_KWARGS = (TrainingKwarg("memory", "memory"),)
#: What an off-policy loop adds: when learning starts, epsilon-greedy exploration where
#: the training spec sets it, the n-step buffer beside a prioritised one.
OFF_POLICY_KWARGS = (
    _training("learning_delay"),
    _training("eps_start", optional=True),
    _training("eps_end", optional=True),
    _training("eps_decay", optional=True),
    TrainingKwarg("n_step_memory", "n_step_memory", optional=True),
)
#: How a single-agent off-policy agent acts before it learns (optional: a training object
#: of an older shape, without it, keeps the loop's default; the other families' runs
#: refuse ``uniform``).
WARMUP_KWARGS = (_training("warmup_actions", optional=True),)
#: Whether agents that share an architecture train as cohorts.
COHORTS_FLAG = (_training("cohorts", optional=True),)
#: What a loop of agents that train in cohorts adds (single-agent online, multi-agent): the
#: environment spec (to step a cohort's copies together) and the flag.
COHORT_KWARGS = (TrainingKwarg("env_spec", "env_spec"), *COHORTS_FLAG)
#: A contextual bandit's episode length.
BANDIT_KWARGS = (_training("episode_steps"),)
#: How a multi-agent loop scores an episode (the agents' scores summed, or each kept).
MULTI_AGENT_KWARGS = (_training("sum_scores"),)
#: An LLM fine-tuning loop: its own evaluation interval; the rest only where set.
LLM_KWARGS = (
    _training("evaluation_interval"),
    TrainingKwarg("max_reward", "env_spec", "max_reward", optional=True),
    _training("checkpoint_steps", optional=True),
    _training("checkpoint_path", optional=True),
    _training("num_epochs", optional=True),
)


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
    #: The training loop's keyword arguments, by the algorithm's ``off_policy``.
    training_kwargs: Mapping[bool, tuple[TrainingKwarg, ...]]

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
        training_kwargs={
            False: RUN_KWARGS + COHORT_KWARGS,
            True: RUN_KWARGS + MEMORY_KWARGS + OFF_POLICY_KWARGS + WARMUP_KWARGS + COHORT_KWARGS,
        },
    ),
    AgentType.MultiAgent: AgentKind(
        environment_specs={None: "PzEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=False,
        training_kwargs={
            False: RUN_KWARGS + MULTI_AGENT_KWARGS + COHORT_KWARGS,
            True: RUN_KWARGS
            + MEMORY_KWARGS
            + OFF_POLICY_KWARGS
            + MULTI_AGENT_KWARGS
            + COHORT_KWARGS,
        },
    ),
    AgentType.OfflineAgent: AgentKind(
        environment_specs={None: "OfflineEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=True,
        training_kwargs={
            False: RUN_KWARGS + MEMORY_KWARGS + COHORTS_FLAG,
            True: RUN_KWARGS + MEMORY_KWARGS + OFF_POLICY_KWARGS + COHORTS_FLAG,
        },
    ),
    AgentType.BanditAgent: AgentKind(
        environment_specs={None: "BanditEnvSpec"},
        network_section="NetworkSection",
        encoder=True,
        replay_memory=True,
        training_kwargs={
            False: RUN_KWARGS + MEMORY_KWARGS + BANDIT_KWARGS,
            True: RUN_KWARGS + MEMORY_KWARGS + OFF_POLICY_KWARGS + BANDIT_KWARGS,
        },
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
        training_kwargs={False: LLM_KWARGS, True: LLM_KWARGS},
    ),
}

#: The training kwargs of an algorithm spec of no kind (the bare ``AlgorithmSpec``), by
#: its ``off_policy``.
KINDLESS_TRAINING_KWARGS: Mapping[bool, tuple[TrainingKwarg, ...]] = {
    False: RUN_KWARGS,
    True: RUN_KWARGS + MEMORY_KWARGS + OFF_POLICY_KWARGS,
}


def training_kwargs_of(agent_type: AgentType | None, off_policy: bool) -> tuple[TrainingKwarg, ...]:
    """The training kwargs of an algorithm of ``agent_type`` (None: of no kind)."""
    kind = AGENT_KINDS.get(agent_type)  # type: ignore[arg-type]
    table = KINDLESS_TRAINING_KWARGS if kind is None else kind.training_kwargs
    return table[bool(off_policy)]


def uses_replay_memory(agent_type: AgentType | None, off_policy: bool) -> bool:
    """Whether an algorithm of ``agent_type`` learns from a replay buffer."""
    kind = AGENT_KINDS.get(agent_type)  # type: ignore[arg-type]
    return bool(off_policy) or (kind is not None and kind.replay_memory)
