"""Run specs: environments, training, replay buffer, mutation and selection.

Each case is judged by pydantic (the generated class) and by the schema (Python
``jsonschema`` with the rules keyword); the two must agree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agilerl.files.schema import validator_for
from agilerl.models.env import (
    LLM_ENV_SPECS,
    BanditEnvSpec,
    GymEnvSpec,
    LLMPreferenceEnvSpec,
    LLMReasoningEnvSpec,
    LLMSftEnvSpec,
    OfflineEnvSpec,
    PzEnvSpec,
    WrapperConfig,
)
from agilerl.models.hpo import (
    MutationProbabilities,
    MutationSpec,
    RLHyperparameter,
    TournamentSelectionSpec,
)
from agilerl.models.training import (
    NStepBufferArgs,
    PerBufferArgs,
    ReplayBufferSpec,
    TrainingSpec,
)

REASONING = {
    "dataset": "data/countdown.parquet",
    "columns": {"nums": "question", "target": "answer"},
    "prompt_template": {
        "system_0": "You are a helpful assistant.",
        "user_1": "Using {question}, make {answer}.",
        "assistant_2": "Let me solve this step by step.\n<think>",
    },
    "reward_file_path": "reward.py",
    "reward_fn_name": "combined_rewards",
    "max_reward": 2.0,
    "train_test_split": 0.8,
}

#: A minimal valid document per spec.
MINIMAL: dict[type[BaseModel], dict[str, Any]] = {
    GymEnvSpec: {"name": "CartPole-v1"},
    OfflineEnvSpec: {"name": "CartPole-v1", "dataset_path": "data/cartpole.h5"},
    PzEnvSpec: {"name": "mpe2.simple_speaker_listener_v4"},
    # No table is required: a bandit given in Python has none (a manifest's are checked
    # by agilerl validate and the run, tests/families/test_python_env.py).
    BanditEnvSpec: {},
    LLMReasoningEnvSpec: {
        k: REASONING[k]
        for k in ("dataset", "prompt_template", "reward_file_path", "reward_fn_name")
    },
    LLMPreferenceEnvSpec: {"dataset": "data/prefs.parquet"},
    LLMSftEnvSpec: {"dataset": "data/sft.jsonl"},
    TrainingSpec: {},
    ReplayBufferSpec: {},
    MutationSpec: {},
    TournamentSelectionSpec: {},
}

#: A document per spec with (nearly) every field set, taken from the reference manifests.
FULL: dict[type[BaseModel], dict[str, Any]] = {
    GymEnvSpec: {
        "name": "GridWorld",
        "entrypoint": "envs/grid.py:GridEnv",
        "path": "examples",
        "num_envs": 8,
        "config": {"size": 5, "render_mode": None, "nested": {"a": [1, 2]}},
        "wrappers": [
            "gymnasium.wrappers.RecordEpisodeStatistics",
            {"wrapper": "my_wrappers:ClipReward", "kwargs": {"low": -1, "high": 1}},
            {"wrapper": "gymnasium.wrappers.FlattenObservation"},
        ],
        "sync": True,
    },
    OfflineEnvSpec: {
        "name": "CartPole-v1",
        "num_envs": 16,
        "minari_dataset_id": "cartpole/random-v0",
        "remote": False,
    },
    PzEnvSpec: {
        "name": "mpe2.simple_speaker_listener_v4",
        "num_envs": 16,
        "config": {"continuous_actions": True, "max_cycles": 25},
        "wrappers": ["supersuit:pad_observations_v0"],
    },
    BanditEnvSpec: {
        "name": "IRIS",
        "features": "tests/data/iris_features.csv",
        "targets": "tests/data/iris_targets.parquet",
    },
    LLMReasoningEnvSpec: {"env_type": "reasoning", **REASONING},
    LLMPreferenceEnvSpec: {
        "env_type": "preference",
        "dataset": "data/prefs",
        "columns": {"question": "prompt"},
        "train_test_split": 1,
    },
    LLMSftEnvSpec: {"env_type": "sft", "dataset": "data/sft.json", "response_column": "chosen"},
    TrainingSpec: {
        "max_steps": 1000000,
        "evo_steps": 10000,
        "pop_size": 4,
        "eval_steps": None,
        "eval_loop": 1,
        "target_score": 200.0,
        "learning_delay": 1000,
        "eps_start": 1.0,
        "eps_end": 0.1,
        "eps_decay": 0.99,
        "checkpoint_steps": 5000,
        "checkpoint_path": "checkpoints/dqn",
        "overwrite_checkpoints": True,
        "evaluation_interval": 5,
        "num_epochs": 1,
        "max_wall_seconds": 200000,
        "episode_steps": 500,
        "sum_scores": False,
        "hpo": False,
    },
    ReplayBufferSpec: {
        "max_size": 10000,
        "n_step_buffer": True,
        "n_step_buffer_args": {"n_step": 4},
        "per_buffer": True,
        "per_buffer_args": {"alpha": 0.6},
    },
    MutationSpec: {
        "probabilities": {
            "no_mut": 0.4,
            "arch_mut": 0.2,
            "new_layer": 0.2,
            "params_mut": 0.2,
            "act_mut": 0.2,
            "rl_hp_mut": 0.2,
        },
        "rl_hp_selection": {
            "lr": {"min": 0.0000625, "max": 0.01},
            "batch_size": {"min": 8, "max": 512},
            "learn_step": {"min": 1, "max": 10, "grow_factor": 1.5, "shrink_factor": 0.5},
        },
        "mutation_sd": 0.1,
        "rand_seed": 42,
    },
    TournamentSelectionSpec: {"strategy": "tournament", "tournament_size": 2, "elitism": True},
}

SPECS = list(MINIMAL)


def verdicts(spec: type[BaseModel], doc: Any) -> tuple[bool, bool]:
    """(pydantic accepts, schema accepts)."""
    try:
        spec.model_validate(doc)
        ok = True
    except ValidationError:
        ok = False
    return ok, validator_for(spec.__name__).is_valid(doc)


def accepted(spec: type[BaseModel], doc: Any) -> BaseModel:
    assert verdicts(spec, doc) == (True, True), doc
    return spec.model_validate(doc)


def rejected(spec: type[BaseModel], doc: Any, *, where: tuple | None = None) -> None:
    assert verdicts(spec, doc) == (False, False), doc
    if where is not None:
        with pytest.raises(ValidationError) as info:
            spec.model_validate(doc)
        assert where in [tuple(e["loc"]) for e in info.value.errors()], info.value.errors()


# --- every spec ---------------------------------------------------------------------------


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("which", ["minimal", "full"])
def test_round_trip(spec, which):
    doc = (MINIMAL if which == "minimal" else FULL)[spec]
    model = accepted(spec, doc)
    dumped = model.model_dump(mode="json")
    json.dumps(dumped)  # plain JSON data
    assert validator_for(spec.__name__).is_valid(dumped)
    again = spec.model_validate(dumped)
    assert again == model
    assert again.model_dump(mode="json") == dumped


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.__name__)
def test_unknown_keys_are_rejected(spec):
    rejected(spec, {**MINIMAL[spec], "bogus": 1}, where=("bogus",))


#: (spec, one of its integer fields), for specs that have one.
INTEGER_FIELDS = [
    (spec, name)
    for spec in SPECS
    for name, field in spec.model_fields.items()
    if field.annotation is int
]


@pytest.mark.parametrize(("spec", "field"), INTEGER_FIELDS, ids=lambda x: getattr(x, "__name__", x))
def test_no_type_coercion(spec, field):
    # strict like the schema: no "8" -> 8, no true -> 1, no 1.5 -> 1
    for bad in ("8", True, 1.5):
        rejected(spec, {**MINIMAL[spec], field: bad}, where=(field,))


def test_required_fields():
    for spec, doc in MINIMAL.items():
        for key in doc:
            rejected(spec, {k: v for k, v in doc.items() if k != key}, where=(key,))


# --- environments -------------------------------------------------------------------------


def test_gym_env_defaults():
    env = GymEnvSpec(name="CartPole-v1")
    assert (env.entrypoint, env.path, env.config, env.wrappers) == (None, None, None, None)
    assert env.num_envs == 16
    assert env.sync is False
    rejected(GymEnvSpec, {"name": ""}, where=("name",))
    rejected(GymEnvSpec, {"name": "CartPole-v1", "num_envs": 0}, where=("num_envs",))
    accepted(GymEnvSpec, {"name": "CartPole-v1", "num_envs": 4.0})


@pytest.mark.parametrize(
    "entrypoint",
    ["my_envs.grid:make_env", "envs/grid.py:GridEnv", "./a b/c.py:_Env2", "pkg.mod:f"],
)
def test_entrypoint_pattern_accepts(entrypoint):
    assert accepted(GymEnvSpec, {"name": "x", "entrypoint": entrypoint}).entrypoint == entrypoint
    accepted(PzEnvSpec, {"name": "x", "entrypoint": entrypoint})


@pytest.mark.parametrize(
    "entrypoint",
    [
        "my_envs.grid",  # no callable
        ":make_env",  # no module
        "mod:",  # empty callable
        "mod:1make",  # not an identifier
        "mod:make-env",
        "a:b:c",
        "mod:make_env\n",  # a trailing newline ($ in Python's re would allow it)
        "",
    ],
)
def test_entrypoint_pattern_rejects(entrypoint):
    rejected(GymEnvSpec, {"name": "x", "entrypoint": entrypoint}, where=("entrypoint",))
    rejected(PzEnvSpec, {"name": "x", "entrypoint": entrypoint})


def test_config_is_an_open_map():
    config = {"render_mode": "rgb_array", "any key": {"nested": [1, None, "x"]}, "n": 3}
    env = accepted(GymEnvSpec, {"name": "x", "config": config})
    assert env.config == config
    assert type(env.config) is dict
    rejected(GymEnvSpec, {"name": "x", "config": ["render_mode"]}, where=("config",))


def test_wrappers_union():
    env = accepted(GymEnvSpec, FULL[GymEnvSpec])
    first, second, third = env.wrappers
    assert first == "gymnasium.wrappers.RecordEpisodeStatistics"
    assert isinstance(second, WrapperConfig)
    assert (second.wrapper, second.kwargs) == ("my_wrappers:ClipReward", {"low": -1, "high": 1})
    assert third.kwargs == {}
    for bad in (
        ["NotDotted"],  # neither a dotted path nor an entry point
        ["gymnasium.wrappers.X\n"],
        [{"kwargs": {}}],  # wrapper missing
        [{"wrapper": "a.B", "kwarg": {}}],  # closed object
        [{"wrapper": "a.B", "kwargs": []}],
        [["a.B", {"k": 1}]],  # the reference's tuple form is not a spec form
        [5],
        "a.B",
    ):
        rejected(GymEnvSpec, {"name": "x", "wrappers": bad})


def test_offline_env_extends_the_gym_fields():
    env = accepted(OfflineEnvSpec, MINIMAL[OfflineEnvSpec])
    assert env.num_envs == 16 and env.sync is False
    assert env.minari_dataset_id is None and env.remote is False
    rejected(OfflineEnvSpec, {"name": "CartPole-v1", "dataset_path": ""}, where=("dataset_path",))
    # The reference's Minari source: an id of its form, instead of the file, not beside it.
    for minari_id in ("cartpole/random-v0", "cartpole-v0", "D4RL/door/human-v2", "pointmaze"):
        doc = {"name": "CartPole-v1", "minari_dataset_id": minari_id}
        assert accepted(OfflineEnvSpec, doc).minari_dataset_id == minari_id
    for bad in ("../../etc/passwd", "/abs/path-v0", "cartpole/random-v0\n", "", "a b-v0"):
        doc = {"name": "CartPole-v1", "minari_dataset_id": bad}
        rejected(OfflineEnvSpec, doc, where=("minari_dataset_id",))
    rejected(
        OfflineEnvSpec,
        {**MINIMAL[OfflineEnvSpec], "minari_dataset_id": "cartpole-v0"},
        where=("minari_dataset_id",),
    )
    rejected(OfflineEnvSpec, {"name": "CartPole-v1"}, where=("dataset_path",))
    rejected(OfflineEnvSpec, {**MINIMAL[OfflineEnvSpec], "remote": "no"}, where=("remote",))


def test_pettingzoo_env_sync_chooses_in_process_copies():
    # AgileRL's PzEnvSpec has no `sync` (always worker processes); ours has the Gym
    # spec's, default false, so a manifest can ask for either (issue 13).
    env = accepted(PzEnvSpec, MINIMAL[PzEnvSpec])
    assert env.num_envs == 16 and env.config is None and env.wrappers is None
    assert env.sync is False
    assert accepted(PzEnvSpec, {**MINIMAL[PzEnvSpec], "sync": True}).sync
    rejected(PzEnvSpec, {**MINIMAL[PzEnvSpec], "sync": "yes"}, where=("sync",))


IRIS_TABLES = {"features": "data/iris_features.csv", "targets": "data/iris_targets.csv"}


def test_bandit_env():
    env = accepted(BanditEnvSpec, MINIMAL[BanditEnvSpec])
    assert (env.name, env.features, env.targets) == ("BanditEnv", None, None)
    assert accepted(BanditEnvSpec, IRIS_TABLES).targets == IRIS_TABLES["targets"]
    for suffix in ("csv", "parquet", "pq"):
        accepted(BanditEnvSpec, {**IRIS_TABLES, "features": f"a/b.{suffix}"})
    for bad in ("a/b.txt", "a/b.csv\n", "a/b.csv.gz", ""):
        rejected(BanditEnvSpec, {**IRIS_TABLES, "targets": bad}, where=("targets",))


def test_llm_env_defaults_and_tags():
    reasoning = accepted(LLMReasoningEnvSpec, MINIMAL[LLMReasoningEnvSpec])
    assert reasoning.env_type == "reasoning"
    assert (reasoning.columns, reasoning.max_reward, reasoning.train_test_split) == (
        None,
        None,
        0.9,
    )
    assert LLMPreferenceEnvSpec(dataset="d.parquet").env_type == "preference"
    sft = LLMSftEnvSpec(dataset="d.parquet")
    assert (sft.env_type, sft.response_column) == ("sft", "response")
    assert {tag: spec.model_fields["env_type"].default for tag, spec in LLM_ENV_SPECS.items()} == {
        "reasoning": "reasoning",
        "preference": "preference",
        "sft": "sft",
    }
    for tag, spec in LLM_ENV_SPECS.items():
        other = next(t for t in LLM_ENV_SPECS if t != tag)
        rejected(spec, {**MINIMAL[spec], "env_type": other}, where=("env_type",))


def test_llm_env_fields():
    spec = LLMReasoningEnvSpec
    base = MINIMAL[spec]
    for split in (0, -0.1, 1.5):
        rejected(spec, {**base, "train_test_split": split}, where=("train_test_split",))
    accepted(spec, {**base, "train_test_split": 1})
    # columns and prompt_template: any keys, string values
    accepted(spec, {**base, "columns": {"a column": "x", "": "y"}})
    rejected(spec, {**base, "columns": {"a": 1}}, where=("columns", "a"))
    rejected(
        spec, {**base, "prompt_template": {"user_1": None}}, where=("prompt_template", "user_1")
    )
    rejected(spec, {**base, "reward_fn_name": "not-a-name"}, where=("reward_fn_name",))
    rejected(spec, {**base, "reward_fn_name": "f\n"}, where=("reward_fn_name",))
    # preference and SFT datasets carry no reward
    rejected(
        LLMSftEnvSpec, {"dataset": "d", "reward_file_path": "r.py"}, where=("reward_file_path",)
    )
    rejected(LLMPreferenceEnvSpec, {"dataset": "d", "prompt_template": {}})


def test_llm_env_dumps_keep_the_tag():
    assert LLMSftEnvSpec(dataset="d").model_dump()["env_type"] == "sft"


# --- training -----------------------------------------------------------------------------


def test_training_defaults():
    t = TrainingSpec()
    assert t.model_dump() == {
        "max_steps": 1000000,
        "evo_steps": None,
        "pop_size": 1,
        "eval_steps": None,
        "eval_loop": 1,
        "target_score": None,
        "learning_delay": 0,
        "warmup_actions": "policy",
        "eps_start": None,
        "eps_end": None,
        "eps_decay": None,
        "checkpoint_steps": None,
        "checkpoint_path": None,
        "overwrite_checkpoints": False,
        "evaluation_interval": 10,
        "num_epochs": None,
        "max_wall_seconds": None,
        "episode_steps": 500,
        "sum_scores": True,
        "seed": None,
        "hpo": True,
        "cohorts": True,
        "tensorboard_log_dir": None,
        "wandb": None,
    }


@pytest.mark.parametrize(
    ("field", "bad", "good"),
    [
        ("max_steps", 0, 1),
        ("evo_steps", 0, 1),
        ("pop_size", 0, 1),
        ("eval_steps", 0, 1),
        ("eval_loop", 0, 1),
        ("learning_delay", -1, 0),
        ("eps_start", 1.1, 1.0),
        ("eps_end", -0.1, 0.0),
        ("eps_decay", 0, 1),
        ("checkpoint_steps", 0, 1),
        ("checkpoint_path", "", "c"),
        ("evaluation_interval", 0, 1),
        ("num_epochs", 0, 1),
        ("max_wall_seconds", 0, 0.5),
        ("episode_steps", 0, 1),
        ("pop_size", 1.5, 2.0),
        ("hpo", 1, False),
        ("target_score", "200", 200),
    ],
)
def test_training_bounds(field, bad, good):
    rejected(TrainingSpec, {field: bad}, where=(field,))
    accepted(TrainingSpec, {field: good})


def test_training_rules():
    rejected(TrainingSpec, {"max_steps": 1000, "evo_steps": 1001}, where=("evo_steps",))
    rejected(TrainingSpec, {"evo_steps": 1000001}, where=("evo_steps",))  # default max_steps
    accepted(TrainingSpec, {"max_steps": 1000, "evo_steps": 1000})
    rejected(TrainingSpec, {"eps_start": 0.1, "eps_end": 0.5}, where=("eps_end",))
    accepted(TrainingSpec, {"eps_start": 0.5, "eps_end": 0.5})
    accepted(TrainingSpec, {"eps_end": 0.5})  # null eps_start: the rule does not apply
    with pytest.raises(ValidationError, match="evo_steps must be <= max_steps"):
        TrainingSpec(max_steps=10, evo_steps=20)


# --- replay buffer ------------------------------------------------------------------------


def test_replay_buffer_defaults_are_instances():
    buffer = ReplayBufferSpec()
    assert buffer.max_size == 100000
    assert buffer.n_step_buffer is False and buffer.per_buffer is False
    assert isinstance(buffer.n_step_buffer_args, NStepBufferArgs)
    assert isinstance(buffer.per_buffer_args, PerBufferArgs)
    assert buffer.n_step_buffer_args.n_step == 3
    assert buffer.per_buffer_args.alpha == 0.5
    # defaults are not shared between instances
    assert ReplayBufferSpec().n_step_buffer_args is not buffer.n_step_buffer_args
    assert buffer.model_dump() == {
        "max_size": 100000,
        "storage": "transitions",
        "standard_buffer": True,
        "n_step_buffer": False,
        "n_step_buffer_args": {"n_step": 3},
        "per_buffer": False,
        "per_buffer_args": {"alpha": 0.5},
    }
    assert ReplayBufferSpec(n_step_buffer_args={}).n_step_buffer_args.n_step == 3


def test_replay_buffer_bounds():
    rejected(ReplayBufferSpec, {"max_size": 0}, where=("max_size",))
    rejected(
        ReplayBufferSpec,
        {"n_step_buffer_args": {"n_step": 0}},
        where=("n_step_buffer_args", "n_step"),
    )
    rejected(
        ReplayBufferSpec, {"per_buffer_args": {"alpha": 1.5}}, where=("per_buffer_args", "alpha")
    )
    rejected(
        ReplayBufferSpec, {"per_buffer_args": {"beta": 0.4}}, where=("per_buffer_args", "beta")
    )
    # the reference's input alias is read as max_size (agilerl/models/legacy.py), but not
    # beside a max_size of another value
    rejected(ReplayBufferSpec, {"memory_size": 1000, "max_size": 10}, where=("memory_size",))


# --- mutation and selection ---------------------------------------------------------------


def test_mutation_defaults():
    mutation = MutationSpec()
    assert mutation.probabilities.no_mut == 0.4
    assert mutation.probabilities == MutationProbabilities(
        no_mut=0.4, arch_mut=0.2, new_layer=0.2, params_mut=0.2, act_mut=0.0, rl_hp_mut=0.2
    )
    assert mutation.rl_hp_selection == {}
    assert (mutation.mutation_sd, mutation.rand_seed) == (0.1, 42)
    assert MutationSpec().probabilities is not mutation.probabilities
    assert MutationSpec(probabilities={"rl_hp_mut": 0.5}).probabilities.no_mut == 0.4
    accepted(MutationSpec, {"rand_seed": None})


def test_mutation_manifest_section_round_trips():
    section = {"rl_hp_selection": {"lr": {"min": 0.0001, "max": 0.01}}}
    mutation = accepted(MutationSpec, section)
    lr = mutation.rl_hp_selection["lr"]
    assert isinstance(lr, RLHyperparameter)
    assert (lr.min, lr.max, lr.grow_factor, lr.shrink_factor) == (0.0001, 0.01, 1.2, 0.8)
    dumped = mutation.model_dump(mode="json")
    assert dumped["rl_hp_selection"] == {
        "lr": {"min": 0.0001, "max": 0.01, "grow_factor": 1.2, "shrink_factor": 0.8}
    }
    assert MutationSpec.model_validate(dumped) == mutation


def test_mutation_bounds():
    for key in MutationProbabilities.model_fields:
        rejected(MutationSpec, {"probabilities": {key: 1.5}}, where=("probabilities", key))
        rejected(MutationSpec, {"probabilities": {key: -0.1}}, where=("probabilities", key))
    rejected(MutationSpec, {"probabilities": {"bogus": 0.1}}, where=("probabilities", "bogus"))
    rejected(MutationSpec, {"mutation_sd": -0.1}, where=("mutation_sd",))
    rejected(MutationSpec, {"rand_seed": -1}, where=("rand_seed",))
    hp = {"min": 1, "max": 2}
    for key, value in (("grow_factor", 0.9), ("shrink_factor", 1.1), ("shrink_factor", -0.1)):
        rejected(
            MutationSpec,
            {"rl_hp_selection": {"lr": {**hp, key: value}}},
            where=("rl_hp_selection", "lr", key),
        )
    rejected(
        MutationSpec,
        {"rl_hp_selection": {"lr": {"min": 1}}},
        where=("rl_hp_selection", "lr", "max"),
    )
    rejected(
        MutationSpec,
        {"rl_hp_selection": {"lr": {**hp, "step": 1}}},
        where=("rl_hp_selection", "lr", "step"),
    )


def test_rl_hyperparameter_rule():
    # RLHyperparameter is no document of its own: the schema judges it inside MutationSpec.
    def section(hp):
        return {"rl_hp_selection": {"lr": hp}}

    for bad in ({"min": 1, "max": 0.1}, {"min": 0.01, "max": 0.01}):
        rejected(MutationSpec, section(bad), where=("rl_hp_selection", "lr", "min"))
        with pytest.raises(ValidationError, match="min must be < max"):
            RLHyperparameter.model_validate(bad)
    accepted(MutationSpec, section({"min": 0.1, "max": 1}))
    assert RLHyperparameter(min=0.1, max=1).max == 1


@pytest.mark.parametrize("key", ["lr", "batch_size", "_x", "ent_coef2"])
def test_rl_hp_selection_accepts_attribute_names(key):
    accepted(MutationSpec, {"rl_hp_selection": {key: {"min": 0, "max": 1}}})


@pytest.mark.parametrize("key", ["", "2lr", "learning-rate", "lr ", "lr\n", "a.b"])
def test_rl_hp_selection_rejects_other_keys(key):
    rejected(MutationSpec, {"rl_hp_selection": {key: {"min": 0, "max": 1}}})


def test_tournament_selection():
    selection = TournamentSelectionSpec()
    assert (selection.strategy, selection.tournament_size, selection.elitism) == (
        "tournament",
        2,
        True,
    )
    assert selection.model_dump()["strategy"] == "tournament"
    rejected(TournamentSelectionSpec, {"strategy": "multi_frequency"}, where=("strategy",))
    rejected(TournamentSelectionSpec, {"tournament_size": 0}, where=("tournament_size",))
    accepted(TournamentSelectionSpec, {"tournament_size": 1})


# --- purity -------------------------------------------------------------------------------


def test_run_spec_modules_import_no_heavy_library():
    heavy = ["gymnasium", "pettingzoo", "pandas", "torch", "minari", "datasets"]
    code = (
        "import sys, json; import agilerl.models.env, agilerl.models.training, agilerl.models.hpo; "
        "agilerl.models.env.GymEnvSpec(name='CartPole-v1', wrappers=['a.B']); "
        f"print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
