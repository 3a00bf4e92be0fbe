"""AgileRL's ``agilerl.models`` by its own names (drop-in for its users).

The tables below are the reference inventory (``agilerl_models_package.md`` §0, §1,
§4-§8, §10, AgileRL 549d85e) written as data: every name a user of AgileRL imports from
``agilerl.models`` (its ``env`` module aside, which has tests of its own), each field's
default and bounds, each algorithm module's class and facts; then the behaviour of each
method those names bring (the replay buffer section's and the networks helpers' in
tests/models/test_replay_base.py and test_networks.py). Field defaults of the algorithm
and network specs are the seed parity test's (tests/models/test_seed_parity.py).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

import agilerl
import agilerl.models as models
from agilerl.models import (
    ALGO_REGISTRY,
    DQNSpec,
    GymEnvSpec,
    MultiFrequencySelectionSpec,
    MutationProbabilities,
    MutationSpec,
    NStepBufferArgs,
    PerBufferArgs,
    ReplayBufferSpec,
    RLAlgorithmSpec,
    RLHyperparameter,
    SelectionStrategySpec,
    TournamentSelectionSpec,
    TrainingManifest,
    TrainingSpec,
    dump_manifest,
    load_manifest,
    parse_manifest,
)
from agilerl.models.algo import AgentType, bandit, off_policy, offline, register
from agilerl.models.validation import SpecError

# -- §1: the names of the package ---------------------------------------------------------

#: Names AgileRL's ``agilerl.models`` exports (its env specs aside).
PACKAGE_NAMES = [
    "ALGO_REGISTRY",
    "AlgoSpec",
    "RLAlgorithmSpec",
    "MultiAgentRLAlgorithmSpec",
    "LLMAlgorithmSpec",
    *(
        f"{name}Spec"
        for name in (
            "DQN",
            "RainbowDQN",
            "DDPG",
            "TD3",
            "PPO",
            "CQN",
            "NeuralUCB",
            "NeuralTS",
            "IPPO",
            "MADDPG",
            "MATD3",
            "DPO",
            "GRPO",
        )
    ),
    "RLHyperparameter",
    "MutationProbabilities",
    "MutationSpec",
    "TournamentSelectionSpec",
    "MultiFrequencySelectionSpec",
    "SelectionStrategySpec",
    "TrainingManifest",
    "MlpSpec",
    "CnnSpec",
    "LstmSpec",
    "MultiInputSpec",
    "SimbaSpec",
    "NetworkSpec",
    "QNetworkSpec",
    "RainbowQNetworkSpec",
    "DeterministicActorSpec",
    "StochasticActorSpec",
    "ValueNetworkSpec",
    "ContinuousQNetworkSpec",
    "FinetuningNetworkSpec",
    "normalize_manifest_network",
    "ReplayBufferSpec",
    "TrainingSpec",
    "NStepBufferArgs",
    "PerBufferArgs",
    "EnvironmentSpecType",
    "ReplayBufferSpecType",
    "TrainingSpecType",
    "MutationSpecType",
]

#: Names of AgileRL's submodules of ``agilerl.models`` (§4-§8, §10): module -> names.
MODULE_NAMES = {
    "agilerl.models.training": [
        "NStepBufferArgs",
        "PerBufferArgs",
        "ReplayBufferSpec",
        "TrainingSpec",
    ],
    "agilerl.models.hpo": [
        "RLHyperparameter",
        "MutationProbabilities",
        "MutationSpec",
        "TournamentSelectionSpec",
        "MultiFrequencySelectionSpec",
        "SelectionStrategySpec",
    ],
    "agilerl.models.manifest": ["TrainingManifest"],
    "agilerl.models.networks": [
        "infer_encoder_arch",
        "encoder_spec_for_arch",
        "normalize_manifest_network",
        "network_arch_is_resolvable",
        "min_max_validator",
    ],
    "agilerl.models.algo": [
        "ALGO_REGISTRY",
        "AgentType",
        "AlgoSpec",
        "register",
        "off_policy",
        "offline",
        "bandit",
    ],
}


@pytest.mark.parametrize("name", PACKAGE_NAMES)
def test_package_exports_the_name(name: str) -> None:
    assert name in models.__all__
    assert getattr(models, name) is not None


@pytest.mark.parametrize(
    ("module", "name"), [(m, n) for m, names in MODULE_NAMES.items() for n in names]
)
def test_module_has_the_name(module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name)


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("ReplayBufferSpec", "init_buffer"),
        ("ReplayBufferSpec", "init_n_step_buffer"),
        ("TrainingManifest", "get_validated"),
        ("TrainingManifest", "from_trainer_specs"),
        ("TrainingManifest", "tournament_selection"),
    ],
)
def test_spec_has_the_method(name: str, method: str) -> None:
    assert hasattr(getattr(models, name), method)


def test_type_aliases_accept_each_kind() -> None:
    assert isinstance(GymEnvSpec(name="CartPole-v1"), models.EnvironmentSpecType)
    assert isinstance(ReplayBufferSpec(), models.ReplayBufferSpecType)
    assert isinstance(TrainingSpec(), models.TrainingSpecType)
    assert isinstance(MutationSpec(), models.MutationSpecType)
    assert isinstance(DQNSpec(), models.AlgoSpec)
    assert not isinstance(TrainingSpec(), models.AlgoSpec)


def test_agent_type_at_the_top_without_the_engine() -> None:
    assert agilerl.AgentType is models.AgentType
    code = (
        "import sys; from agilerl import AgentType; "
        "assert AgentType.BanditAgent.value == 'bandit_agent'; "
        "assert 'torch' not in sys.modules and 'gymnasium' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- §4, §5: fields, defaults and bounds ---------------------------------------------------

#: (class, field, default, values accepted, values refused), from the reference tables.
FIELDS: list[tuple[type[BaseModel], str, Any, list[Any], list[Any]]] = [
    (NStepBufferArgs, "n_step", 3, [1], [0]),
    (PerBufferArgs, "alpha", 0.5, [0.0, 1.0], [-0.1, 1.1]),
    (ReplayBufferSpec, "max_size", 100_000, [1], [0]),
    (ReplayBufferSpec, "standard_buffer", True, [False], ["yes"]),
    (ReplayBufferSpec, "n_step_buffer", False, [True], ["yes"]),
    (ReplayBufferSpec, "per_buffer", False, [True], ["yes"]),
    (TrainingSpec, "max_steps", 1_000_000, [1], [0]),
    (TrainingSpec, "evo_steps", None, [1], []),
    (TrainingSpec, "pop_size", 1, [1], [0]),
    (TrainingSpec, "eval_steps", None, [100], []),
    (TrainingSpec, "eval_loop", 1, [1], [0]),
    (TrainingSpec, "target_score", None, [200.0], []),
    (TrainingSpec, "learning_delay", 0, [0], [-1]),
    (TrainingSpec, "eps_start", None, [1.0], []),
    (TrainingSpec, "eps_end", None, [0.1], []),
    (TrainingSpec, "eps_decay", None, [0.995], []),
    (TrainingSpec, "checkpoint_steps", None, [1000], []),
    (TrainingSpec, "checkpoint_path", None, ["ckpt"], []),
    (TrainingSpec, "overwrite_checkpoints", False, [True], []),
    (TrainingSpec, "evaluation_interval", 10, [1], [0]),
    (TrainingSpec, "num_epochs", None, [1], []),
    (TrainingSpec, "max_wall_seconds", None, [0.5], [0]),
    (TrainingSpec, "episode_steps", 500, [1], [0]),
    (TrainingSpec, "sum_scores", True, [False], []),
    (RLHyperparameter, "grow_factor", 1.2, [1.0], [0.9]),
    (RLHyperparameter, "shrink_factor", 0.8, [0.0, 1.0], [-0.1, 1.1]),
    *(
        (MutationProbabilities, name, default, [0.0, 1.0], [-0.1, 1.1])
        for name, default in (
            ("no_mut", 0.4),
            ("arch_mut", 0.2),
            ("new_layer", 0.2),
            ("params_mut", 0.2),
            ("act_mut", 0.0),
            ("rl_hp_mut", 0.2),
        )
    ),
    (MutationSpec, "rl_hp_selection", {}, [{}], []),
    (MutationSpec, "mutation_sd", 0.1, [0.0], [-0.1]),
    (MutationSpec, "rand_seed", 42, [0], [-1]),
    (TournamentSelectionSpec, "strategy", "tournament", ["tournament"], ["multi_frequency"]),
    (TournamentSelectionSpec, "tournament_size", 2, [1], [0]),
    (TournamentSelectionSpec, "elitism", True, [False], []),
    (MultiFrequencySelectionSpec, "strategy", "multi_frequency", [], ["tournament"]),
    (MultiFrequencySelectionSpec, "n_subpopulations", 2, [2], [1]),
    (MultiFrequencySelectionSpec, "n_winners", None, [1], [0]),
    (MultiFrequencySelectionSpec, "n_survivors", None, [0], [-1]),
    (MultiFrequencySelectionSpec, "n_open_for_migration", None, [1], [0]),
    (MultiFrequencySelectionSpec, "n_losers", None, [1], [0]),
    (MultiFrequencySelectionSpec, "evolution_frequency_ratios", None, [[1, 5]], []),
]

#: What a class needs besides the field under test.
REQUIRED: dict[type, dict[str, Any]] = {RLHyperparameter: {"min": 0.1, "max": 1.0}}


def _field_id(row: tuple[Any, ...]) -> str:
    return f"{row[0].__name__}.{row[1]}"


@pytest.mark.parametrize("row", FIELDS, ids=_field_id)
def test_field_default(row: tuple[Any, ...]) -> None:
    cls, name, default, _, _ = row
    value = getattr(cls(**REQUIRED.get(cls, {})), name)
    assert (value.model_dump() if isinstance(value, BaseModel) else value) == default


@pytest.mark.parametrize("row", FIELDS, ids=_field_id)
def test_field_bounds(row: tuple[Any, ...]) -> None:
    cls, name, _, accepted, refused = row
    for value in accepted:
        assert getattr(cls(**REQUIRED.get(cls, {}), **{name: value}), name) == value
    for value in refused:
        with pytest.raises(ValidationError) as err:
            cls(**REQUIRED.get(cls, {}), **{name: value})
        assert any(e["loc"][:1] == (name,) for e in err.value.errors()), err.value


def test_hyperparameter_range_requires_min_and_max() -> None:
    with pytest.raises(ValidationError) as err:
        RLHyperparameter()
    assert {e["loc"] for e in err.value.errors()} == {("min",), ("max",)}


# -- §5: SelectionStrategySpec -------------------------------------------------------------

SELECTION = TypeAdapter(SelectionStrategySpec)


@pytest.mark.parametrize(
    ("document", "cls"),
    [
        ({"strategy": "tournament", "tournament_size": 3}, TournamentSelectionSpec),
        ({"strategy": "multi_frequency", "n_subpopulations": 3}, MultiFrequencySelectionSpec),
    ],
)
def test_selection_strategy_is_chosen_by_its_tag(document: dict, cls: type) -> None:
    assert type(SELECTION.validate_python(document)) is cls


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ({"strategy": "bogus"}, "union_tag_invalid"),
        ({"strategy": "multi_frequency", "tournament_size": 2}, "extra_forbidden"),
    ],
)
def test_selection_strategy_refuses(document: dict, error: str) -> None:
    with pytest.raises(ValidationError) as err:
        SELECTION.validate_python(document)
    assert err.value.errors()[0]["type"] == error


# -- §8: one module per algorithm ------------------------------------------------------------

#: module -> (class, agent type, off_policy, network spec, training function).
ALGORITHM_MODULES = {
    "dqn": ("DQNSpec", "single_agent", True, "QNetworkSpec", "train_off_policy"),
    "rainbow_dqn": (
        "RainbowDQNSpec",
        "single_agent",
        True,
        "RainbowQNetworkSpec",
        "train_off_policy",
    ),
    "ddpg": ("DDPGSpec", "single_agent", True, "DeterministicActorSpec", "train_off_policy"),
    "td3": ("TD3Spec", "single_agent", True, "DeterministicActorSpec", "train_off_policy"),
    "ppo": ("PPOSpec", "single_agent", False, "StochasticActorSpec", "train_on_policy"),
    "cqn": ("CQNSpec", "offline_agent", False, "QNetworkSpec", "train_offline"),
    "neural_ucb": ("NeuralUCBSpec", "bandit_agent", False, "QNetworkSpec", "train_bandits"),
    "neural_ts": ("NeuralTSSpec", "bandit_agent", False, "QNetworkSpec", "train_bandits"),
    "ippo": (
        "IPPOSpec",
        "multi_agent",
        False,
        "StochasticActorSpec",
        "train_multi_agent_on_policy",
    ),
    "maddpg": (
        "MADDPGSpec",
        "multi_agent",
        True,
        "DeterministicActorSpec",
        "train_multi_agent_off_policy",
    ),
    "matd3": (
        "MATD3Spec",
        "multi_agent",
        True,
        "DeterministicActorSpec",
        "train_multi_agent_off_policy",
    ),
    "grpo": ("GRPOSpec", "llm_agent", False, None, "finetune_llm_reasoning"),
    "gspo": ("GSPOSpec", "llm_agent", False, None, "finetune_llm_reasoning"),
    "cispo": ("CISPOSpec", "llm_agent", False, None, "finetune_llm_reasoning"),
    "llmreinforce": ("LLMREINFORCESpec", "llm_agent", False, None, "finetune_llm_reasoning"),
    "llmppo": ("LLMPPOSpec", "llm_agent", False, None, "finetune_llm_reasoning"),
    "dpo": ("DPOSpec", "llm_agent", False, None, "finetune_llm_preference"),
    "sft": ("SFTSpec", "llm_agent", False, None, "finetune_llm_sft"),
}


@pytest.mark.parametrize("module", sorted(ALGORITHM_MODULES))
def test_algorithm_module(module: str) -> None:
    name, agent_type, is_off_policy, network, training_fn = ALGORITHM_MODULES[module]
    cls = getattr(importlib.import_module(f"agilerl.models.algorithms.{module}"), name)
    assert cls is getattr(importlib.import_module("agilerl.models.algorithms"), name)
    assert ALGO_REGISTRY.get(name.removesuffix("Spec")).spec_cls is cls
    assert cls.agent_type is AgentType(agent_type)
    assert cls.off_policy is is_off_policy
    assert cls.offline is (agent_type == "offline_agent")
    assert cls.bandit is (agent_type == "bandit_agent")
    assert cls.training_fn_name == training_fn
    if network is not None:  # LLM specs: the finetuning network (not a net_config)
        assert cls.network_spec_name == network


# -- §2.1 of agilerl_models.md: the decorators of specs written in Python -------------------


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> Any:
    """ALGO_REGISTRY, restored after the test (a test's spec leaves no entry)."""
    monkeypatch.setattr(ALGO_REGISTRY, "_entries", dict(ALGO_REGISTRY._entries))
    return ALGO_REGISTRY


@pytest.mark.parametrize(
    ("decorator", "agent_type", "flags"),
    [
        (off_policy, AgentType.SingleAgent, (True, False, False)),
        (offline, AgentType.OfflineAgent, (False, True, False)),
        (bandit, AgentType.BanditAgent, (False, False, True)),
    ],
    ids=["off_policy", "offline", "bandit"],
)
def test_decorators_set_the_facts(registry: Any, decorator: Any, agent_type: Any, flags) -> None:
    @register()
    @decorator()
    class MyAlgoSpec(RLAlgorithmSpec):
        pass

    assert registry.get("MyAlgo").spec_cls is MyAlgoSpec
    assert MyAlgoSpec.agent_type is agent_type
    assert (MyAlgoSpec.off_policy, MyAlgoSpec.offline, MyAlgoSpec.bandit) == flags
    # the base class is untouched
    assert (RLAlgorithmSpec.off_policy, RLAlgorithmSpec.offline, RLAlgorithmSpec.bandit) == (
        False,
        False,
        False,
    )


# -- §6: TrainingManifest.get_validated / from_trainer_specs / tournament_selection ---------

MANIFEST = {
    "algorithm": {"name": "DQN", "lr": 0.001},
    "environment": {"name": "CartPole-v1", "num_envs": 4},
    "training": {"max_steps": 2000, "evo_steps": 500},
    "selection_strategy": {"tournament_size": 3},
}


def test_get_validated_json_from_a_mapping() -> None:
    assert TrainingManifest.get_validated(MANIFEST) == dump_manifest(parse_manifest(MANIFEST))
    assert TrainingManifest.get_validated(MANIFEST, mode="json")["algorithm"]["lr"] == 0.001


def test_get_validated_python_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(
        "algorithm:\n  name: DQN\n  lr: 0.001\nenvironment:\n  name: CartPole-v1\n"
        "  num_envs: 4\ntraining:\n  max_steps: 2000\n  evo_steps: 500\n"
        "selection_strategy:\n  tournament_size: 3\n"
    )
    manifest = TrainingManifest.get_validated(path, mode="python")
    assert isinstance(manifest, TrainingManifest)
    assert manifest == load_manifest(path) == parse_manifest(MANIFEST)
    assert TrainingManifest.get_validated(str(path)) == dump_manifest(manifest)


def test_get_validated_names_every_unknown_key(tmp_path: Any) -> None:
    document = {
        **MANIFEST,
        "algorithm": {"name": "DQN", "bogus": 1},
        "training": {"max_steps": 2000, "metricz": 1},
        "extra": True,
    }
    with pytest.raises(SpecError) as err:
        TrainingManifest.get_validated(document)
    assert isinstance(err.value, ValueError)
    where = {".".join(map(str, issue.path)) for issue in err.value.issues}
    assert where == {"algorithm.bogus", "training.metricz", "extra"}
    assert "unknown key" in str(err.value)


@pytest.mark.parametrize(
    ("manifest", "mode", "error"),
    [(MANIFEST, "yaml", ValueError), (42, "json", TypeError), ([MANIFEST], "python", TypeError)],
)
def test_get_validated_refuses(manifest: Any, mode: str, error: type) -> None:
    with pytest.raises(error, match="mode|manifest"):
        TrainingManifest.get_validated(manifest, mode=mode)


def _specs() -> dict[str, Any]:
    return {
        "algorithm": DQNSpec(lr=0.001),
        "environment": GymEnvSpec(name="CartPole-v1", num_envs=4),
        "training": TrainingSpec(max_steps=2000, evo_steps=500),
        "selection_strategy": TournamentSelectionSpec(tournament_size=3),
    }


def test_from_trainer_specs_round_trip() -> None:
    manifest = TrainingManifest.from_trainer_specs(**_specs())
    assert isinstance(manifest, TrainingManifest)
    assert manifest == TrainingManifest.get_validated(dump_manifest(manifest), mode="python")
    assert manifest.algorithm.lr == 0.001
    assert manifest.selection_strategy == TournamentSelectionSpec(tournament_size=3)


def test_from_trainer_specs_writes_what_the_trainer_writes() -> None:
    from agilerl.trainer import LocalTrainer

    specs = _specs()
    trainer = LocalTrainer(**specs)
    assert dump_manifest(TrainingManifest.from_trainer_specs(**specs)) == dump_manifest(
        trainer.to_manifest()
    )


def test_from_trainer_specs_takes_mappings_too() -> None:
    mappings = {key: dump_manifest(parse_manifest(MANIFEST))[key] for key in _specs()}
    assert TrainingManifest.from_trainer_specs(**mappings) == TrainingManifest.from_trainer_specs(
        **_specs()
    )


def test_from_trainer_specs_tournament_selection_is_the_old_name() -> None:
    specs = {**_specs(), "selection_strategy": None}
    with pytest.warns(DeprecationWarning, match="tournament_selection"):
        manifest = TrainingManifest.from_trainer_specs(
            **specs, tournament_selection={"tournament_size": 3}
        )
    assert manifest == TrainingManifest.from_trainer_specs(**_specs())
    with pytest.warns(DeprecationWarning):  # the same section twice: accepted
        TrainingManifest.from_trainer_specs(**_specs(), tournament_selection={"tournament_size": 3})
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="differ"):
        TrainingManifest.from_trainer_specs(**_specs(), tournament_selection={"tournament_size": 4})


def test_from_trainer_specs_refuses() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument.*hpo"):
        TrainingManifest.from_trainer_specs(**_specs(), hpo=True)
    with pytest.raises(TypeError, match="environment"):
        TrainingManifest.from_trainer_specs(**{**_specs(), "environment": 3})
    with pytest.raises(SpecError, match=r"training\.max_steps"):
        TrainingManifest.from_trainer_specs(**{**_specs(), "training": {"max_steps": 0}})


def test_tournament_selection_property_is_deprecated() -> None:
    manifest = parse_manifest(MANIFEST)
    with pytest.warns(DeprecationWarning, match="selection_strategy"):
        assert manifest.tournament_selection == TournamentSelectionSpec(tournament_size=3)
    plain = parse_manifest({k: v for k, v in MANIFEST.items() if k != "selection_strategy"})
    with pytest.warns(DeprecationWarning):
        assert plain.tournament_selection is None
    mf = parse_manifest(
        {
            **MANIFEST,
            "training": {"max_steps": 2000, "evo_steps": 500, "pop_size": 6},
            "selection_strategy": {"strategy": "multi_frequency"},
        }
    )
    with pytest.warns(DeprecationWarning):
        assert mf.tournament_selection is None
    assert "tournament_selection" not in dump_manifest(manifest)
