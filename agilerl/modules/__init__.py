"""Evolvable torch modules built from the network specs of :mod:`agilerl.models`.

Importing this package loads torch; :mod:`agilerl.models` never imports it.
"""

from agilerl.modules.base import SAFE_ACTIVATIONS, EvolvableModule, make_activation, mutation
from agilerl.modules.cnn import EvolvableCNN
from agilerl.modules.lstm import EvolvableLSTM
from agilerl.modules.mlp import EvolvableMLP, MlpEncoder
from agilerl.modules.multi_input import EvolvableMultiInput
from agilerl.modules.simba import EvolvableSimBa

__all__ = [
    "SAFE_ACTIVATIONS",
    "EvolvableCNN",
    "EvolvableLSTM",
    "EvolvableMLP",
    "EvolvableModule",
    "EvolvableMultiInput",
    "EvolvableSimBa",
    "MlpEncoder",
    "make_activation",
    "mutation",
]
