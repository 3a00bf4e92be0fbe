"""RL networks (encoder + head) built from the network specs of :mod:`agilerl.models`."""

from agilerl.networks.base import (
    ENCODER_BUILDERS,
    EvolvableNetwork,
    build_encoder,
    infer_encoder_spec,
    preprocess,
)
from agilerl.networks.networks import (
    ContinuousQNetwork,
    DeterministicActor,
    QNetwork,
    StochasticActor,
    ValueNetwork,
)
from agilerl.networks.rainbow import RainbowQNetwork

__all__ = [
    "ENCODER_BUILDERS",
    "ContinuousQNetwork",
    "DeterministicActor",
    "EvolvableNetwork",
    "QNetwork",
    "RainbowQNetwork",
    "StochasticActor",
    "ValueNetwork",
    "build_encoder",
    "infer_encoder_spec",
    "preprocess",
]
