"""Starter manifests (agilerl/cli/starter.py), what ``agilerl init`` writes: every
registered algorithm's starts valid, with its defaults and ranges only for what may
mutate; a file name of its own; image environments get a CNN and Atari its frames."""

from __future__ import annotations

import pytest
from pydantic_core import PydanticUndefined

from agilerl.cli.starter import MAX_ENV_CHARS, default_file_name, env_refusal, starter_manifest
from agilerl.models import parse_manifest
from agilerl.models.registry import ALGO_REGISTRY

SPECS = {name: ALGO_REGISTRY.get(name).spec_cls for name in ALGO_REGISTRY.names()}


@pytest.mark.parametrize("name", SPECS)
def test_every_algorithms_starter_manifest_is_valid_as_written(name):
    manifest = starter_manifest(SPECS[name])
    parsed = parse_manifest(manifest)
    assert parsed.algorithm.name == name


@pytest.mark.parametrize("name", SPECS)
def test_the_algorithm_section_holds_its_defaults(name):
    spec = SPECS[name]
    section = starter_manifest(spec)["algorithm"]
    for field, value in section.items():
        if field == "name":
            continue
        default = spec.model_fields[field].default
        if default is not PydanticUndefined:  # a required field starts at a schema example
            assert value == default, field


def test_rates_and_the_batch_size_get_ranges_around_their_defaults():
    dqn = starter_manifest(SPECS["DQN"])
    lr = dqn["algorithm"]["lr"]
    ranges = dqn["mutation"]["rl_hp_selection"]
    assert ranges["lr"] == {"min": lr / 10, "max": lr * 10}
    assert ranges["batch_size"] == {"min": 8, "max": 512}


def test_off_policy_algorithms_get_a_replay_buffer_and_on_policy_ones_none():
    assert starter_manifest(SPECS["DQN"])["replay_buffer"] == {"max_size": 100_000}
    assert "replay_buffer" not in starter_manifest(SPECS["PPO"])


def test_a_deterministic_actor_starts_on_a_continuous_environment():
    assert starter_manifest(SPECS["TD3"])["environment"]["name"] == "Pendulum-v1"


def test_a_named_environment_replaces_the_default_one():
    manifest = starter_manifest(SPECS["PPO"], "LunarLander-v3")
    assert manifest["environment"]["name"] == "LunarLander-v3"
    assert parse_manifest(manifest).environment.name == "LunarLander-v3"


def test_an_image_environment_gets_a_cnn_and_an_atari_game_stores_its_frames_once():
    assert starter_manifest(SPECS["DQN"], "CartPole-v1")["network"]["arch"] == "mlp"
    plain = starter_manifest(SPECS["DQN"], "CartPole-v1", image_observations=True)
    assert plain["network"]["arch"] == "cnn"
    game = starter_manifest(SPECS["DQN"], "ALE/Pong-v5")
    assert "atari" in game["environment"]
    assert game["replay_buffer"]["storage"] == "frames"


def test_the_file_is_named_after_the_algorithm_and_the_environment():
    manifest = starter_manifest(SPECS["PPO"], "ALE/Breakout-v5")
    assert default_file_name(manifest) == "ppo-ale-breakout-v5.yaml"
    assert default_file_name(starter_manifest(SPECS["DQN"])) == "dqn-cartpole-v1.yaml"


def test_an_environment_name_init_cannot_use_is_refused_saying_why():
    assert env_refusal("CartPole-v1") is None
    assert env_refusal("x" * MAX_ENV_CHARS) is None
    assert env_refusal("  ").startswith("--env: empty; name an environment")
    assert env_refusal("x" * (MAX_ENV_CHARS + 1)).startswith(
        f"--env: {MAX_ENV_CHARS + 1:,} characters, more than the {MAX_ENV_CHARS}"
    )
