"""Network specifications: encoders selected by ``arch``, MLP heads, LLM networks.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.cnn_schema import CnnSpec
    from generated.continuous_q_network_schema import ContinuousQNetworkSpec
    from generated.deterministic_actor_schema import DeterministicActorSpec
    from generated.finetuning_network_schema import FinetuningNetworkSpec
    from generated.lora_config_schema import LoraConfigDict
    from generated.lstm_schema import LstmSpec
    from generated.mlp_schema import MlpSpec
    from generated.multi_input_schema import MultiInputSpec
    from generated.network_schema import NetworkFields, NetworkSpec
    from generated.q_network_schema import QNetworkSpec
    from generated.rainbow_q_network_schema import RainbowQNetworkSpec
    from generated.simba_schema import SimbaSpec
    from generated.stochastic_actor_schema import StochasticActorSpec
    from generated.value_network_schema import ValueNetworkSpec
else:
    from agilerl._generated.cnn_schema import CnnSpec
    from agilerl._generated.continuous_q_network_schema import ContinuousQNetworkSpec
    from agilerl._generated.deterministic_actor_schema import DeterministicActorSpec
    from agilerl._generated.finetuning_network_schema import FinetuningNetworkSpec
    from agilerl._generated.lora_config_schema import LoraConfigDict
    from agilerl._generated.lstm_schema import LstmSpec
    from agilerl._generated.mlp_schema import MlpSpec
    from agilerl._generated.multi_input_schema import MultiInputSpec
    from agilerl._generated.network_schema import NetworkFields, NetworkSpec
    from agilerl._generated.q_network_schema import QNetworkSpec
    from agilerl._generated.rainbow_q_network_schema import RainbowQNetworkSpec
    from agilerl._generated.simba_schema import SimbaSpec
    from agilerl._generated.stochastic_actor_schema import StochasticActorSpec
    from agilerl._generated.value_network_schema import ValueNetworkSpec

#: Members of the ``encoder_config`` union, in schema order.
ENCODER_SPECS = (MlpSpec, CnnSpec, LstmSpec, MultiInputSpec, SimbaSpec)

#: Every network spec; all share the fields of :class:`NetworkFields`.
NETWORK_SPECS = (
    NetworkSpec,
    QNetworkSpec,
    ContinuousQNetworkSpec,
    DeterministicActorSpec,
    StochasticActorSpec,
    ValueNetworkSpec,
    RainbowQNetworkSpec,
)

__all__ = [
    "ENCODER_SPECS",
    "NETWORK_SPECS",
    "CnnSpec",
    "ContinuousQNetworkSpec",
    "DeterministicActorSpec",
    "FinetuningNetworkSpec",
    "LoraConfigDict",
    "LstmSpec",
    "MlpSpec",
    "MultiInputSpec",
    "NetworkFields",
    "NetworkSpec",
    "QNetworkSpec",
    "RainbowQNetworkSpec",
    "SimbaSpec",
    "StochasticActorSpec",
    "ValueNetworkSpec",
]
