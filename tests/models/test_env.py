"""AgileRL's ``agilerl.models.env`` by its own names (issue 29): each name imports, each
field has the reference's default and bounds, and the methods build working environments.
The table is AgileRL's inventory (research notes, agilerl_models_package.md §3 and
agilerl_models.md §4.1), written as data."""

from __future__ import annotations

import sys
import textwrap

import pytest
from pydantic import ValidationError

import agilerl.models as models
from agilerl.models import env as env_module
from agilerl.models.env import (
    RUN_REFUSALS,
    BanditEnvSpec,
    EnvSpec,
    GymEnvSpec,
    LLMEnvSpec,
    LLMEnvType,
    OfflineEnvSpec,
    PettingZooEnvSpec,
    PzEnvSpec,
)

MISSING = object()  # a required field

#: reference name -> {field: default} (MISSING: required).
REFERENCE_FIELDS = {
    "EnvSpec": {"name": MISSING, "num_envs": 16},
    "GymEnvSpec": {
        "name": MISSING,
        "num_envs": 16,
        "entrypoint": None,
        "path": None,
        "config": None,
        "wrappers": None,
        "sync": False,
    },
    "PzEnvSpec": {
        "name": MISSING,
        "num_envs": 16,
        "entrypoint": None,
        "path": None,
        "config": None,
        "wrappers": None,
    },
    "OfflineEnvSpec": {
        "name": MISSING,
        "num_envs": 16,
        "minari_dataset_id": None,
        "dataset_path": None,
        "remote": False,
    },
    "BanditEnvSpec": {
        "name": "BanditEnv",
        "features": None,
        "targets": None,
        "entrypoint": None,
        "path": None,
        "config": None,
    },
    "LLMEnvSpec": {
        "env_type": MISSING,
        "dataset": None,
        "columns": None,
        "prompt_template": None,
        "max_reward": None,
        "train_test_split": 0.9,
        "reward_file_path": None,
        "reward_fn_name": None,
        "response_column": "response",
        "env_name": None,
        "entrypoint": None,
        "env_config": None,
        "max_turns": None,
        "strict_chat_template_boundary": True,
    },
}


@pytest.mark.parametrize("name", sorted(REFERENCE_FIELDS))
def test_each_reference_name_has_the_reference_fields(name):
    cls = getattr(env_module, name)
    assert name in env_module.__all__ and getattr(models, name, cls) is cls
    for field, default in REFERENCE_FIELDS[name].items():
        info = cls.model_fields[field]
        assert info.is_required() == (default is MISSING), (name, field)
        if default is not MISSING:
            assert info.default == default, (name, field)


def test_the_reference_bounds():
    with pytest.raises(ValidationError, match="num_envs"):
        GymEnvSpec(name="CartPole-v1", num_envs=0)
    with pytest.raises(ValidationError, match="max_turns"):
        LLMEnvSpec(env_type="multiturn", env_name="g", max_turns=0)
    with pytest.raises(ValidationError, match="train_test_split"):
        LLMEnvSpec(env_type="sft", dataset="d", train_test_split=1.5)


def test_the_aliases_and_bases_are_one_class_each():
    assert PettingZooEnvSpec is PzEnvSpec
    assert all(issubclass(cls, EnvSpec) for cls in (GymEnvSpec, OfflineEnvSpec, PzEnvSpec))
    assert issubclass(OfflineEnvSpec, GymEnvSpec.__mro__[1])  # the Gymnasium fields
    assert [str(t) for t in LLMEnvType] == ["reasoning", "preference", "sft", "multiturn"]


def test_the_spec_layer_imports_no_engine():
    import subprocess

    code = (
        "import sys, agilerl.models.env\n"
        "print(sorted(m for m in ('torch','gymnasium','pettingzoo','pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- LLMEnvSpec rules, in the reference's order ------------------------------------------
REASONING = {
    "dataset": "d.jsonl",
    "reward_file_path": "r.py",
    "reward_fn_name": "r",
    "prompt_template": {"user_1": "{question}"},
}


def _errors(**fields):
    with pytest.raises(ValidationError) as info:
        LLMEnvSpec(**fields)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in info.value.errors()]


def test_reasoning_needs_its_fields_in_the_reference_order():
    assert [loc for loc, _ in _errors(env_type="reasoning")] == list(REASONING)
    assert _errors(env_type="reasoning", **{**REASONING, "reward_fn_name": None}) == [
        ("reward_fn_name", 'reward_fn_name is required when env_type is "reasoning"')
    ]


@pytest.mark.parametrize("env_type", ["preference", "sft"])
def test_preference_and_sft_need_a_dataset_and_no_reward(env_type):
    assert _errors(env_type=env_type) == [
        ("dataset", f'dataset is required when env_type is "{env_type}"')
    ]
    [(loc, msg)] = _errors(env_type=env_type, dataset="d", reward_file_path="r.py")
    assert loc == "reward_file_path" and msg.startswith("reward_file_path must be left out")


def test_multiturn_needs_exactly_one_source_and_config_only_with_an_entrypoint():
    spec = LLMEnvSpec(env_type="multiturn", env_name="game:GuessTheNumber-v0-easy")
    assert spec.name == "game:GuessTheNumber-v0-easy" and spec.dataset is None
    assert LLMEnvSpec(env_type="multiturn", entrypoint="envs:make", env_config={"a": 1}).name == (
        "envs:make"
    )
    assert _errors(env_type="multiturn") == [
        ("env_name", 'env_name is required when env_type is "multiturn" and entrypoint is null')
    ]
    [(loc, _)] = _errors(env_type="multiturn", env_name="g", entrypoint="envs:make")
    assert loc == "entrypoint"
    [(loc, _)] = _errors(env_type="multiturn", env_name="g", env_config={})
    assert loc == "env_config"


def test_name_is_the_dataset_first():
    assert LLMEnvSpec(env_type="reasoning", **REASONING).name == "d.jsonl"


def test_a_gem_multiturn_env_is_refused_before_a_run_naming_the_field():
    from agilerl.models.env import LLMReasoningEnvSpec

    spec = LLMReasoningEnvSpec(env_type="multiturn", env_name="g")
    refusal = RUN_REFUSALS[type(spec)](spec)
    assert refusal.startswith("environment.env_name: 'g' is a GEM environment")
    assert "gem-llm" in refusal and "environment.entrypoint" in refusal
    python = LLMReasoningEnvSpec(env_type="multiturn", entrypoint="envs:make")
    assert RUN_REFUSALS[type(python)](python) is None  # a Python class or factory trains
    assert RUN_REFUSALS[LLMEnvSpec](LLMEnvSpec(env_type="sft", dataset="d")) is None


# --- building environments ----------------------------------------------------------------
def test_gym_make_env_gives_a_vector_env_of_num_envs():
    env = GymEnvSpec(name="CartPole-v1", num_envs=3, vectorize="sync").make_env(
        extra_wrappers=["gymnasium.wrappers.RecordEpisodeStatistics"]
    )
    try:
        obs, _ = env.reset(seed=0)
        assert env.num_envs == 3 and obs.shape == (3, 4)
    finally:
        env.close()
    single = GymEnvSpec(name="CartPole-v1").make_single_env()
    assert single.reset(seed=0)[0].shape == (4,)
    single.close()


def test_construct_custom_env_fn_applies_config_and_wrappers(tmp_path):
    (tmp_path / "custom_envs.py").write_text(
        textwrap.dedent(
            """
            import gymnasium as gym

            def make(length):
                return gym.wrappers.TimeLimit(gym.make("CartPole-v1"), length)

            class Tag(gym.Wrapper):
                def __init__(self, env, label):
                    super().__init__(env)
                    self.label = label
            """
        )
    )
    factory = GymEnvSpec.construct_custom_env_fn(
        "custom_envs.py:make",
        path=str(tmp_path),
        config={"length": 7},
        wrappers=[{"wrapper": "custom_envs.py:Tag", "kwargs": {"label": "x"}}],
    )
    env = factory()
    env.reset(seed=0)
    steps = 0
    while True:
        steps += 1
        _, _, terminated, truncated, _ = env.step(0)
        if terminated or truncated:
            break
    assert steps <= 7 and env.get_wrapper_attr("label") == "x"
    env.close()


def test_pz_make_single_env_builds_a_pettingzoo_builtin():
    pytest.importorskip("pettingzoo")
    env = PzEnvSpec(name="pettingzoo.classic.rps_v2").make_single_env()
    observations, _ = env.reset(seed=0)
    assert set(observations) == set(env.possible_agents) and len(env.possible_agents) == 2
    env.close()


def test_bandit_make_env_from_tables(tmp_path):
    (tmp_path / "f.csv").write_text("x,y\n" + "\n".join(f"{i},{i % 3}" for i in range(30)) + "\n")
    (tmp_path / "t.csv").write_text("label\n" + "\n".join(str(i % 3) for i in range(30)) + "\n")
    bandit = BanditEnvSpec(features="f.csv", targets="t.csv").make_env(tmp_path)
    assert bandit.num_arms == 3 and bandit.reset().shape[-1] == 3 * 2
