"""An algorithm class bound to its spec (``agilerl.algorithms.core.binding``): the
constructor's signature, defaults, validation, ``init_args`` and mutation limits all come
from the spec class, so no default or bound is written twice."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from pydantic import Field

import agilerl.algorithms
from agilerl.algorithms import DQN, TD3
from agilerl.algorithms.core.binding import hyperparameter_names
from agilerl.models.algorithms.dqn import DQNSpec
from agilerl.models.algorithms.td3 import TD3Spec
from agilerl.models.limits import hyperparameter_limits
from agilerl.models.registry import ALGO_REGISTRY

OBS = spaces.Box(-1.0, 1.0, (3,), np.float32)
BOUND = [n for n in agilerl.algorithms.NAMES if getattr(agilerl.algorithms, n).binds_arguments]


@pytest.mark.parametrize("name", agilerl.algorithms.NAMES)
def test_every_algorithm_is_bound_to_its_registered_spec(name):
    assert getattr(agilerl.algorithms, name).spec is ALGO_REGISTRY.get(name).spec_cls


def test_every_algorithm_derives_its_arguments_from_the_spec():
    assert set(BOUND) == set(agilerl.algorithms.NAMES)


@pytest.mark.parametrize("name", BOUND)
def test_the_signature_shows_each_schema_default_as_a_keyword(name):
    cls = getattr(agilerl.algorithms, name)
    params = inspect.signature(cls).parameters
    for field, info in cls.spec.model_fields.items():
        if field == "hp_config":
            continue
        param = params[field]
        assert param.kind is inspect.Parameter.KEYWORD_ONLY, field
        if info.is_required():  # GRPO's group_size: the constructor requires it too
            assert param.default is inspect.Parameter.empty, field
            continue
        assert param.default is info.get_default(call_default_factory=True) or (
            param.default == info.get_default(call_default_factory=True)
        ), field
    # The spec's hyperparameters, then those the class states no schema holds.
    assert cls.init_args[: len(hyperparameter_names(cls.spec))] == hyperparameter_names(cls.spec)


def test_a_subclass_with_a_related_spec_gets_its_own_defaults():
    assert inspect.signature(TD3).parameters["tau"].default == TD3Spec.model_fields["tau"].default
    assert inspect.signature(TD3).parameters["tau"].default == 0.005
    assert TD3(OBS, spaces.Box(-1, 1, (2,))).tau == 0.005
    # Positional arguments stay where they were.
    assert list(inspect.signature(DQN).parameters)[:3] == [
        "observation_space", "action_space", "index"
    ]  # fmt: skip


def test_the_agent_gets_the_schema_default_and_the_declared_types():
    agent = DQN(OBS, spaces.Discrete(2), lr=1, batch_size=np.int64(64), learn_step=4.0)
    assert agent.gamma == DQNSpec.model_fields["gamma"].default
    assert type(agent.lr) is float and agent.lr == 1.0
    assert type(agent.batch_size) is int and agent.batch_size == 64
    assert type(agent.learn_step) is int and agent.learn_step == 4


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"lr": -1.0}, ValueError, r"DQN\(lr=-1.0\): must be >= 0"),
        ({"gamma": 1.5}, ValueError, r"DQN\(gamma=1.5\): must be >= 0 and <= 1"),
        ({"batch_size": 0}, ValueError, r"DQN\(batch_size=0\): must be >= 1"),
        ({"batch_size": 2.5}, ValueError, r"DQN\(batch_size=2.5\): must be an integer"),
        ({"double": "yes"}, ValueError, r"DQN\(double='yes'\): must be a boolean"),
        ({"lr": True}, ValueError, r"DQN\(lr=True\): must be a number"),
        ({"learning_rate": 1e-3}, TypeError, "unexpected keyword argument 'learning_rate'"),
    ],
)
def test_a_bad_value_is_refused_naming_the_argument_and_the_bound(kwargs, error, message):
    with pytest.raises(error, match=message):
        DQN(OBS, spaces.Discrete(2), **kwargs)


def test_mutation_limits_come_from_the_bound_spec():
    limits = hyperparameter_limits(DQNSpec)
    agent = DQN(OBS, spaces.Discrete(2), hp_config={"gamma": {"min": 0.5, "max": 3.0}})
    assert agent.hp_config["gamma"].max == limits["gamma"].high == 1.0


class _Spec(DQNSpec):
    """A user's spec: DQN's fields and one of its own."""

    warmup: int = Field(default=7, ge=0)


class MyDQN(DQN, spec=_Spec):
    """A user's algorithm bound to a spec of its own."""


class PlainSubclass(DQN):
    """A subclass naming no spec keeps DQN's."""

    def __init__(self, observation_space: Any, action_space: Any, index: int = 0, **options: Any):
        super().__init__(observation_space, action_space, index, **options)


def test_a_user_subclass_binding_a_spec_works():
    params = inspect.signature(MyDQN).parameters
    assert params["warmup"].default == 7 and params["lr"].default == DQNSpec().lr
    agent = MyDQN(OBS, spaces.Discrete(2), warmup=3, lr=1e-3)
    assert agent.warmup == 3 and agent.lr == 1e-3
    assert "warmup" in MyDQN.init_args and agent.hyperparameters()["warmup"] == 3
    with pytest.raises(ValueError, match=r"MyDQN\(warmup=-1\): must be >= 0"):
        MyDQN(OBS, spaces.Discrete(2), warmup=-1)
    assert PlainSubclass.spec is DQNSpec and PlainSubclass.init_args == DQN.init_args
    assert inspect.signature(PlainSubclass).parameters["lr"].default == DQNSpec().lr
    with pytest.raises(TypeError, match="PlainSubclass\\(\\) got an unexpected keyword"):
        PlainSubclass(OBS, spaces.Discrete(2), warmup=3)
