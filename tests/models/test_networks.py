"""The networks helpers of the spec layer (agilerl/models/networks.py), by AgileRL's
names: the encoder an observation space gets, the encoder spec of an ``arch``, a
manifest's ``network`` section normalised, whether its arch can be resolved, and the
min <= max validator."""

from __future__ import annotations

from typing import Any

import pytest
from gymnasium import spaces
from pydantic import BaseModel, ValidationError, model_validator

from agilerl.models import parse_manifest
from agilerl.models.networks import (
    ENCODER_SPECS,
    encoder_spec_for_arch,
    infer_encoder_arch,
    min_max_validator,
    network_arch_is_resolvable,
    normalize_manifest_network,
)

#: A small valid manifest (AgileRL's own sections and names).
MANIFEST = {
    "algorithm": {"name": "DQN", "lr": 0.001},
    "environment": {"name": "CartPole-v1", "num_envs": 4},
    "training": {"max_steps": 2000, "evo_steps": 500},
}


BOX = spaces.Box(-1.0, 1.0, (4,))
IMAGE = spaces.Box(0, 255, (3, 32, 32))
DICT = spaces.Dict({"image": IMAGE, "vector": BOX})
TUPLE = spaces.Tuple((BOX, spaces.Discrete(3)))


@pytest.mark.parametrize(
    ("space", "recurrent", "simba", "arch"),
    [
        (DICT, False, False, "multiinput"),
        (TUPLE, True, True, "multiinput"),
        (IMAGE, False, False, "cnn"),
        (IMAGE, True, True, "cnn"),
        (BOX, False, False, "mlp"),
        (spaces.Discrete(5), False, False, "mlp"),
        (BOX, True, False, "lstm"),
        (BOX, False, True, "simba"),
        # the project's rule: recurrent wins (AgileRL's gives simba; docs/differences.md)
        (BOX, True, True, "lstm"),
    ],
)
def test_infer_encoder_arch(space: Any, recurrent: bool, simba: bool, arch: str) -> None:
    assert infer_encoder_arch(space, recurrent=recurrent, simba=simba) == arch
    # one rule: the engine's default encoder is of the arch this picks
    from agilerl.networks.base import infer_encoder_spec

    assert infer_encoder_spec(space, recurrent=recurrent, simba=simba).arch == arch


@pytest.mark.parametrize("cls", ENCODER_SPECS, ids=lambda c: c.__name__)
def test_encoder_spec_for_arch(cls: type[BaseModel]) -> None:
    assert encoder_spec_for_arch(cls.model_fields["arch"].default) is cls


@pytest.mark.parametrize("arch", ["transformer", "MLP", None])
def test_encoder_spec_for_arch_refuses(arch: Any) -> None:
    with pytest.raises(ValueError, match="Unknown encoder arch"):
        encoder_spec_for_arch(arch)


@pytest.mark.parametrize(
    ("network", "normalized"),
    [
        (None, None),
        ("mlp", "mlp"),
        ({"latent_dim": 32}, {"latent_dim": 32}),
        (
            {"arch": "mlp", "encoder_config": {"hidden_size": [64]}},
            {"encoder_config": {"hidden_size": [64], "arch": "mlp"}},
        ),
        (
            {"arch": "mlp", "encoder_config": {"arch": "mlp", "hidden_size": [64]}},
            {"encoder_config": {"arch": "mlp", "hidden_size": [64]}},
        ),
        (
            {"encoder_config": {"arch": "cnn", "channel_size": [8]}},
            {"encoder_config": {"arch": "cnn", "channel_size": [8]}},
        ),
        # the encoder's defaults: a top-level arch alone stays (docs/differences.md)
        ({"arch": "lstm", "latent_dim": 32}, {"arch": "lstm", "latent_dim": 32}),
    ],
)
def test_normalize_manifest_network(network: Any, normalized: Any) -> None:
    before = repr(network)
    assert normalize_manifest_network(network) == normalized
    assert repr(network) == before  # the argument is left as it was


def test_normalized_network_is_the_same_network() -> None:
    network = {
        "arch": "mlp",
        "encoder_config": {"hidden_size": [32]},
        "head_config": {"hidden_size": [16]},
        "latent_dim": 16,
    }
    given = parse_manifest({**MANIFEST, "network": network})
    normalized = parse_manifest({**MANIFEST, "network": normalize_manifest_network(network)})
    assert given.network_arch == ("mlp", "network.arch")
    assert normalized.network_arch == ("mlp", "network.encoder_config.arch")
    assert normalized.network.latent_dim == given.network.latent_dim == 16
    assert normalized.network.encoder_config == {**given.network.encoder_config, "arch": "mlp"}


def test_normalize_manifest_network_refuses_two_archs() -> None:
    with pytest.raises(ValueError, match=r"network\.encoder_config\.arch.*'cnn'"):
        normalize_manifest_network({"arch": "mlp", "encoder_config": {"arch": "cnn"}})


@pytest.mark.parametrize(
    ("network", "resolvable"),
    [
        (None, False),
        ({}, False),
        ({"latent_dim": 32}, False),
        ({"arch": "mlp"}, True),
        ({"arch": ""}, False),
        ({"encoder_config": {"arch": "cnn"}}, True),
        ({"encoder_config": {"hidden_size": [64]}}, False),
        ({"encoder_config": None}, False),
    ],
)
def test_network_arch_is_resolvable(network: Any, resolvable: bool) -> None:
    assert network_arch_is_resolvable(network) is resolvable


@pytest.mark.parametrize(
    "network",
    [
        {"arch": "mlp"},
        {"encoder_config": {"arch": "mlp", "hidden_size": [8]}},
        {"encoder_config": {"hidden_size": [8]}},
        {"latent_dim": 8},
    ],
)
def test_network_arch_is_resolvable_agrees_with_the_manifest(network: dict) -> None:
    section = {**network, "head_config": {"hidden_size": [8]}}
    manifest = parse_manifest({**MANIFEST, "network": section})
    arch, _ = manifest.network_arch
    assert network_arch_is_resolvable(section) is (arch is not None)
    assert network_arch_is_resolvable(manifest.network) is (arch is not None)


class _Range(BaseModel):
    low: int
    high: int

    _check = model_validator(mode="after")(min_max_validator("low", "high"))


def test_min_max_validator() -> None:
    assert _Range(low=2, high=2).low == 2
    with pytest.raises(ValidationError, match=r"low \(3\) is greater than high \(2\)"):
        _Range(low=3, high=2)
    check = min_max_validator("low", "high")
    with pytest.raises(ValueError, match="low must be at most high"):
        check(_Range.model_construct(low=5, high=1))
    fine = _Range.model_construct(low=1, high=5)
    assert check(fine) is fine
