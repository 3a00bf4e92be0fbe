"""Algorithm specification bases, the algorithm registry and the decorators of specs
users write in Python (AgileRL's ``register()``, ``off_policy()``, ``offline()`` and
``bandit()``).

The project's own specs get these facts from their schema (``x-agilerl-algorithm``);
the decorators set the same ClassVars on a class written in Python, so the registry,
the manifest and the trainer treat it alike.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from agilerl.models.base import (
    AgentType,
    AlgorithmBase,
    AlgorithmNotAvailableError,
    LLMAlgorithmBase,
    MultiAgentRLAlgorithmBase,
    RLAlgorithmBase,
)
from agilerl.models.registry import ALGO_REGISTRY, AlgorithmRegistry, RegistryEntry, register

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same file from the tree.
    from generated.algorithm_schema import AlgorithmSpec
    from generated.llm_algorithm_schema import CosineLRScheduleConfig, LLMAlgorithmSpec, VLLMConfig
    from generated.multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmSpec
    from generated.rl_algorithm_schema import RLAlgorithmSpec
else:
    from agilerl._generated.algorithm_schema import AlgorithmSpec
    from agilerl._generated.llm_algorithm_schema import (
        CosineLRScheduleConfig,
        LLMAlgorithmSpec,
        VLLMConfig,
    )
    from agilerl._generated.multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmSpec
    from agilerl._generated.rl_algorithm_schema import RLAlgorithmSpec

SpecT = TypeVar("SpecT", bound=type[AlgorithmBase])

#: Any algorithm spec of the three families (AgileRL's alias, for annotations and
#: ``isinstance``). The families' behaviour classes: a generated spec such as
#: ``DQNSpec`` shares ``RLAlgorithmSpec``'s fields (schema ``allOf``) but not its class.
AlgoSpec = RLAlgorithmBase | MultiAgentRLAlgorithmBase | LLMAlgorithmBase


def off_policy() -> Callable[[SpecT], SpecT]:
    """Mark a spec class off-policy: its runs fill a replay buffer (``replay_buffer``)
    and its training loop takes the epsilon and learning-delay settings."""

    def decorator(spec_cls: SpecT) -> SpecT:
        spec_cls.off_policy = True
        return spec_cls

    return decorator


def _agent_kind(agent_type: AgentType) -> Callable[[], Callable[[SpecT], SpecT]]:
    """A decorator factory giving a spec class ``agent_type``. ``offline`` and ``bandit``
    are re-derived from it, as :class:`~agilerl.models.base.AlgorithmBase` derives them
    for a schema's spec, so the flag and the agent type cannot disagree."""

    def factory() -> Callable[[SpecT], SpecT]:
        def decorator(spec_cls: SpecT) -> SpecT:
            spec_cls.agent_type = agent_type
            spec_cls.offline = agent_type is AgentType.OfflineAgent
            spec_cls.bandit = agent_type is AgentType.BanditAgent
            return spec_cls

        return decorator

    factory.__doc__ = f"Mark a spec class as a {agent_type.value} algorithm (``{agent_type}``)."
    return factory


#: Learns from a fixed dataset (``AgentType.OfflineAgent``).
offline = _agent_kind(AgentType.OfflineAgent)
#: A contextual bandit (``AgentType.BanditAgent``).
bandit = _agent_kind(AgentType.BanditAgent)

__all__ = [
    "ALGO_REGISTRY",
    "AgentType",
    "AlgoSpec",
    "AlgorithmNotAvailableError",
    "AlgorithmRegistry",
    "AlgorithmSpec",
    "CosineLRScheduleConfig",
    "LLMAlgorithmSpec",
    "MultiAgentRLAlgorithmSpec",
    "RLAlgorithmSpec",
    "RegistryEntry",
    "VLLMConfig",
    "bandit",
    "off_policy",
    "offline",
    "register",
]
