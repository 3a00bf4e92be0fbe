"""Network specifications: encoders selected by ``arch``, MLP heads, LLM networks.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agilerl.models.base import spec_class
from agilerl.models.manifest_base import ENCODER_SPECS as ENCODER_TITLES
from agilerl.models.manifest_base import network_arch_of

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

ModelT = TypeVar("ModelT", bound=BaseModel)


# -- AgileRL's helpers (agilerl.models.networks): the encoder an observation space gets,
# the encoder spec of an arch, the network section with its arch inside encoder_config.


def is_image_space(space: Any) -> bool:
    """A ``gymnasium.spaces.Box`` with three dimensions (channels, height, width): the
    spaces a CNN encodes. The one test of it (the engine's modules use this function)."""
    from gymnasium import spaces  # the caller's space comes from it: already imported

    return isinstance(space, spaces.Box) and len(space.shape) == 3


def infer_encoder_arch(
    observation_space: Any, *, recurrent: bool = False, simba: bool = False
) -> str:
    """The encoder ``arch`` a network gets for ``observation_space`` when its manifest
    names none: ``multiinput`` for a Dict or Tuple space, ``cnn`` for an image, else
    ``lstm`` when ``recurrent``, ``simba`` when ``simba``, ``mlp`` otherwise.

    The one rule of it: the engine's default encoder settings
    (:func:`agilerl.networks.base.infer_encoder_spec`) are chosen by this arch. A
    recurrent network that asks for SimBa too gets an LSTM (AgileRL gives SimBa;
    a manifest refuses the pair, docs/differences.md).
    """
    from gymnasium import spaces  # the caller's space comes from it: already imported

    if isinstance(observation_space, (spaces.Dict, spaces.Tuple)):
        return "multiinput"
    if is_image_space(observation_space):
        return "cnn"
    if recurrent:
        return "lstm"
    if simba:
        return "simba"
    return "mlp"


def encoder_spec_for_arch(arch: str) -> type[BaseModel]:
    """The encoder spec class of an ``arch`` (``"cnn"`` -> :class:`CnnSpec`)."""
    title = ENCODER_TITLES.get(arch) if isinstance(arch, str) else None
    if title is None:
        known = ", ".join(repr(a) for a in ENCODER_TITLES)
        raise ValueError(f"Unknown encoder arch {arch!r}; known: {known}")
    return spec_class(title)


def network_arch_is_resolvable(network: Any) -> bool:
    """Whether a network section names its encoder's ``arch`` (at the top or inside
    ``encoder_config``), rather than leaving it to the observation space."""
    return network_arch_of(network)[0] is not None


def normalize_manifest_network(data: Any) -> Any:
    """A network section with its ``arch`` inside ``encoder_config`` (AgileRL's
    spelling of the section); a copy, the argument is left as it was.

    Anything but a mapping, and a section naming no arch, comes back as it was. A
    section without an ``encoder_config`` keeps its top-level ``arch``: that is how a
    manifest asks for an encoder with its default settings (an ``encoder_config`` of
    the arch alone would lack the encoder's required fields). Two different archs are
    a ValueError, as in a manifest (AgileRL keeps the inner one).
    """
    if not isinstance(data, Mapping):
        return data
    data = dict(data)
    arch = data.get("arch")
    encoder = data.get("encoder_config")
    if arch is None or not isinstance(encoder, Mapping):
        return data
    inner = encoder.get("arch")
    if inner is not None and inner != arch:
        raise ValueError(
            f"network.encoder_config.arch: {inner!r} conflicts with network.arch {arch!r}"
        )
    del data["arch"]
    data["encoder_config"] = {**encoder, "arch": arch}
    return data


def min_max_validator(min_field: str, max_field: str) -> Callable[[ModelT], ModelT]:
    """A check of a model that ``min_field`` is at most ``max_field`` (a ValueError naming
    both otherwise), for specs written in Python:
    ``model_validator(mode="after")(min_max_validator("min_x", "max_x"))``. The
    project's own specs declare the same rule in their schema (``x-agilerl-rules``)."""

    def check(model: ModelT) -> ModelT:
        low, high = getattr(model, min_field), getattr(model, max_field)
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"{min_field} ({low}) is greater than {max_field} ({high}): "
                f"{min_field} must be at most {max_field}"
            )
        return model

    return check


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
    "encoder_spec_for_arch",
    "infer_encoder_arch",
    "is_image_space",
    "min_max_validator",
    "network_arch_is_resolvable",
    "network_arch_of",
    "normalize_manifest_network",
]
