"""The algorithm registry (agilerl/models/registry.py): names to spec classes, an
unknown name answered with the closest registered one (in the manifest too, located at
``algorithm.name``), overriding warned of, and ``register`` for a user's own spec."""

from __future__ import annotations

import warnings

import pytest
from pydantic import ValidationError

from agilerl.models import (
    ALGO_REGISTRY,
    AgentType,
    AlgorithmRegistry,
    AlgorithmSpec,
    DQNSpec,
    PPOSpec,
    RegistryEntry,
    RLAlgorithmSpec,
    parse_manifest,
    register,
)
from agilerl.models.validation import SpecError


def test_dqn_and_ppo_are_registered():
    assert ALGO_REGISTRY.get("DQN") == RegistryEntry(DQNSpec)
    assert ALGO_REGISTRY.get("PPO").spec_cls is PPOSpec
    assert {"DQN", "PPO"} <= set(ALGO_REGISTRY.names())


def test_get_unknown_name_lists_registered():
    with pytest.raises(KeyError) as info:
        ALGO_REGISTRY.get("dqn")
    message = info.value.args[0]
    assert message.startswith("algorithm 'dqn' is not registered (did you mean 'DQN'?)")
    assert message.endswith(f"registered algorithms: {', '.join(ALGO_REGISTRY.names())}")


def test_an_unknown_name_in_a_manifest_says_it_is_not_registered_where():
    # The registry's KeyError, located: the same words at algorithm.name.
    with pytest.raises(SpecError) as info:
        parse_manifest({"algorithm": {"name": "GSPOO"}, "environment": {"name": "CartPole-v1"}})
    (issue,) = info.value.issues
    assert issue.path == ("algorithm", "name")
    assert issue.message == ALGO_REGISTRY.not_registered("GSPOO")
    assert "is not registered" in issue.message


def test_add_warns_when_overriding():
    registry = AlgorithmRegistry()
    registry.add("X", DQNSpec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        registry.add("X", DQNSpec)  # same class again: nothing to warn about
    with pytest.warns(UserWarning, match="Overriding existing registration of algorithm 'X'"):
        registry.add("X", PPOSpec)
    assert registry.get("X").spec_cls is PPOSpec


def test_add_rejects_non_specs():
    with pytest.raises(TypeError, match="not an algorithm spec class"):
        AlgorithmRegistry().add("X", dict)


def test_register_decorator_on_a_user_spec():
    @register()
    class MyAlgoSpec(RLAlgorithmSpec):
        my_rate: float = 0.5

    try:
        assert ALGO_REGISTRY.get("MyAlgo").spec_cls is MyAlgoSpec
        spec = MyAlgoSpec(my_rate=0.1, gamma=0.9)
        assert spec.name == "MyAlgo" and spec.agent_type is AgentType.SingleAgent
        with pytest.raises(ValidationError):
            MyAlgoSpec(unknown=1)  # user subclasses stay closed
    finally:
        ALGO_REGISTRY._entries.pop("MyAlgo")


def test_register_with_explicit_name():
    @register("Custom")
    class OddSpec(AlgorithmSpec):
        pass

    try:
        assert ALGO_REGISTRY.get("Custom").spec_cls is OddSpec
    finally:
        ALGO_REGISTRY._entries.pop("Custom")
