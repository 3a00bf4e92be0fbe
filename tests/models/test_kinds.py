"""The kinds of agent as data (agilerl/models/kinds.py): every registered algorithm
belongs to a row, the row names spec classes that exist, a manifest's sections are validated
by the specs its row names, and which runs keep a replay buffer."""

from __future__ import annotations

import pytest

from agilerl.files.schema import schema_titles
from agilerl.models import parse_manifest
from agilerl.models.base import spec_class
from agilerl.models.kinds import AGENT_KINDS, AgentType, uses_replay_memory
from agilerl.models.registry import ALGO_REGISTRY

SPECS = {name: ALGO_REGISTRY.get(name).spec_cls for name in ALGO_REGISTRY.names()}


def test_every_kind_of_agent_has_its_row():
    assert set(AGENT_KINDS) == set(AgentType)


@pytest.mark.parametrize("name", SPECS)
def test_every_algorithm_finds_its_environment_spec_in_its_row(name):
    spec = SPECS[name]
    kind = AGENT_KINDS[spec.agent_type]
    assert kind.environment_spec(getattr(spec, "env_type", None)) in schema_titles()


def test_the_rows_name_only_spec_classes_that_exist():
    for kind in AGENT_KINDS.values():
        for title in [*kind.environment_specs.values(), kind.network_section]:
            assert spec_class(title).__name__ == title


def test_an_llm_algorithm_trains_in_the_environment_of_its_env_type():
    kind = AGENT_KINDS[AgentType.LLMAgent]
    assert kind.environment_spec("preference") == "LLMPreferenceEnvSpec"
    assert kind.environment_spec("sft") == "LLMSftEnvSpec"
    assert not kind.encoder  # a fine-tuned model has no encoder section
    with pytest.raises(KeyError):
        kind.environment_spec(None)


@pytest.mark.parametrize(
    ("algorithm", "environment", "expected"),
    [
        ("DQN", {"name": "CartPole-v1"}, "GymEnvSpec"),
        ("IPPO", {"name": "pettingzoo.mpe.simple_speaker_listener_v4"}, "PzEnvSpec"),
    ],
)
def test_a_manifests_environment_is_validated_by_its_rows_spec(algorithm, environment, expected):
    manifest = parse_manifest({"algorithm": {"name": algorithm}, "environment": environment})
    assert type(manifest.environment).__name__ == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("DQN", True),  # off-policy
        ("TD3", True),
        ("MADDPG", True),
        ("PPO", False),  # on-policy: a rollout buffer, no replay
        ("IPPO", False),
        ("CQN", True),  # offline: its dataset is loaded into one
        ("NeuralUCB", True),  # bandits: the memory of pulls
        ("GRPO", False),
    ],
)
def test_which_runs_keep_a_replay_buffer(name, expected):
    spec = SPECS[name]
    assert uses_replay_memory(spec.agent_type, spec.off_policy) is expected


def test_an_algorithm_of_no_known_kind_keeps_one_only_when_off_policy():
    assert uses_replay_memory(None, True) is True
    assert uses_replay_memory(None, False) is False
