"""Algorithm specification bases and the algorithm registry."""

from agilerl._generated.algorithm_schema import AlgorithmSpec
from agilerl._generated.llm_algorithm_schema import LLMAlgorithmSpec
from agilerl._generated.multi_agent_rl_algorithm_schema import MultiAgentRLAlgorithmSpec
from agilerl._generated.rl_algorithm_schema import RLAlgorithmSpec
from agilerl.models.base import AgentType, AlgorithmNotAvailableError
from agilerl.models.registry import ALGO_REGISTRY, AlgorithmRegistry, RegistryEntry, register

__all__ = [
    "ALGO_REGISTRY",
    "AgentType",
    "AlgorithmNotAvailableError",
    "AlgorithmRegistry",
    "AlgorithmSpec",
    "LLMAlgorithmSpec",
    "MultiAgentRLAlgorithmSpec",
    "RLAlgorithmSpec",
    "RegistryEntry",
    "register",
]
