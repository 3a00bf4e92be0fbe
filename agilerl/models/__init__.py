"""The declarative spec API (``agilerl.models``).

Importing it never imports torch, gymnasium, transformers, peft or accelerate:
validating a manifest stays fast and light.
"""

from agilerl.models.algo import (
    ALGO_REGISTRY,
    AgentType,
    AlgorithmRegistry,
    AlgorithmSpec,
    AlgoSpec,
    LLMAlgorithmSpec,
    MultiAgentRLAlgorithmSpec,
    RegistryEntry,
    RLAlgorithmSpec,
    register,
)
from agilerl.models.algorithms import (
    CISPOSpec,
    CQNSpec,
    DDPGSpec,
    DPOSpec,
    DQNSpec,
    GRPOSpec,
    GSPOSpec,
    IPPOSpec,
    LLMPPOSpec,
    LLMREINFORCESpec,
    MADDPGSpec,
    MATD3Spec,
    NeuralTSSpec,
    NeuralUCBSpec,
    PPOSpec,
    RainbowDQNSpec,
    SFTSpec,
    TD3Spec,
)
from agilerl.models.env import (
    BanditEnvSpec,
    EnvSpec,
    GymEnvSpec,
    LLMEnvSpec,
    LLMEnvType,
    LLMPreferenceEnvSpec,
    LLMReasoningEnvSpec,
    LLMSftEnvSpec,
    OfflineEnvSpec,
    PettingZooEnvSpec,
    PzEnvSpec,
)
from agilerl.models.hpo import (
    MultiFrequencySelectionSpec,
    MutationProbabilities,
    MutationSpec,
    RLHyperparameter,
    SelectionStrategySpec,
    TournamentSelectionSpec,
)
from agilerl.models.manifest import (
    NetworkSection,
    TrainingManifest,
    dump_manifest,
    load_manifest,
    parse_manifest,
)
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
    normalize_manifest_network,
)
from agilerl.models.training import NStepBufferArgs, PerBufferArgs, ReplayBufferSpec, TrainingSpec

# AgileRL's aliases of what each manifest section may be given as in Python (its
# ``agilerl.models`` declares them for type checkers; here they are importable too).
EnvironmentSpecType = (
    GymEnvSpec
    | PettingZooEnvSpec
    | OfflineEnvSpec
    | BanditEnvSpec
    | LLMReasoningEnvSpec
    | LLMPreferenceEnvSpec
    | LLMSftEnvSpec
)
ReplayBufferSpecType = ReplayBufferSpec
TrainingSpecType = TrainingSpec
MutationSpecType = MutationSpec

__all__ = [
    "AlgoSpec",
    "EnvironmentSpecType",
    "MutationSpecType",
    "ReplayBufferSpecType",
    "SelectionStrategySpec",
    "TrainingSpecType",
    "normalize_manifest_network",
    "BanditEnvSpec",
    "EnvSpec",
    "GymEnvSpec",
    "LLMEnvSpec",
    "LLMEnvType",
    "LLMPreferenceEnvSpec",
    "LLMReasoningEnvSpec",
    "LLMSftEnvSpec",
    "OfflineEnvSpec",
    "PettingZooEnvSpec",
    "PzEnvSpec",
    "MutationProbabilities",
    "MutationSpec",
    "RLHyperparameter",
    "MultiFrequencySelectionSpec",
    "TournamentSelectionSpec",
    "NetworkSection",
    "TrainingManifest",
    "dump_manifest",
    "load_manifest",
    "parse_manifest",
    "NStepBufferArgs",
    "PerBufferArgs",
    "ReplayBufferSpec",
    "TrainingSpec",
    "ALGO_REGISTRY",
    "AgentType",
    "AlgorithmRegistry",
    "AlgorithmSpec",
    "CISPOSpec",
    "CQNSpec",
    "CnnSpec",
    "ContinuousQNetworkSpec",
    "DDPGSpec",
    "DPOSpec",
    "DQNSpec",
    "DeterministicActorSpec",
    "FinetuningNetworkSpec",
    "GRPOSpec",
    "GSPOSpec",
    "IPPOSpec",
    "LLMAlgorithmSpec",
    "LLMPPOSpec",
    "LLMREINFORCESpec",
    "LoraConfigDict",
    "LstmSpec",
    "MADDPGSpec",
    "MATD3Spec",
    "MlpSpec",
    "MultiAgentRLAlgorithmSpec",
    "MultiInputSpec",
    "NetworkSpec",
    "NeuralTSSpec",
    "NeuralUCBSpec",
    "PPOSpec",
    "QNetworkSpec",
    "RLAlgorithmSpec",
    "RainbowDQNSpec",
    "RainbowQNetworkSpec",
    "RegistryEntry",
    "SFTSpec",
    "SimbaSpec",
    "StochasticActorSpec",
    "TD3Spec",
    "ValueNetworkSpec",
    "register",
]
