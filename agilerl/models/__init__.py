"""The declarative spec API (``agilerl.models``).

Importing it never imports torch, gymnasium, transformers, peft or accelerate:
validating a manifest stays fast and light.
"""

from agilerl.models.algo import (
    ALGO_REGISTRY,
    AgentType,
    AlgorithmRegistry,
    AlgorithmSpec,
    LLMAlgorithmSpec,
    MultiAgentRLAlgorithmSpec,
    RegistryEntry,
    RLAlgorithmSpec,
    register,
)
from agilerl.models.algorithms import DQNSpec, PPOSpec
from agilerl.models.networks import (
    CnnSpec,
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    FinetuningNetworkSpec,
    LoraConfigDict,
    LstmSpec,
    MlpSpec,
    MultiInputSpec,
    NetworkSpec,
    QNetworkSpec,
    RainbowQNetworkSpec,
    SimbaSpec,
    StochasticActorSpec,
    ValueNetworkSpec,
)

__all__ = [
    "ALGO_REGISTRY",
    "AgentType",
    "AlgorithmRegistry",
    "AlgorithmSpec",
    "CnnSpec",
    "ContinuousQNetworkSpec",
    "DQNSpec",
    "DeterministicActorSpec",
    "FinetuningNetworkSpec",
    "LLMAlgorithmSpec",
    "LoraConfigDict",
    "LstmSpec",
    "MlpSpec",
    "MultiAgentRLAlgorithmSpec",
    "MultiInputSpec",
    "NetworkSpec",
    "PPOSpec",
    "QNetworkSpec",
    "RLAlgorithmSpec",
    "RainbowQNetworkSpec",
    "RegistryEntry",
    "SimbaSpec",
    "StochasticActorSpec",
    "ValueNetworkSpec",
    "register",
]
