"""Behaviour that the hand-written layer adds to the generated specs. The registry of
algorithm names: tests/models/test_registry.py."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from agilerl.models import (
    AgentType,
    AlgorithmSpec,
    CQNSpec,
    DQNSpec,
    GymEnvSpec,
    LLMAlgorithmSpec,
    MADDPGSpec,
    MlpSpec,
    MultiAgentRLAlgorithmSpec,
    PPOSpec,
    QNetworkSpec,
    RLAlgorithmSpec,
    TrainingSpec,
    parse_manifest,
)
from agilerl.models.algo import AlgorithmNotAvailableError
from agilerl.models.validation import SpecError, parse_spec

MLP = {"arch": "mlp", "hidden_size": [64]}


# --- model_dump -------------------------------------------------------------------------


def test_mlp_dump_drops_unset_output_activation():
    assert "output_activation" not in MlpSpec(hidden_size=[64]).model_dump()
    assert "output_activation" not in MlpSpec(hidden_size=[64]).model_dump(mode="json")


def test_mlp_dump_keeps_a_set_output_activation():
    dumped = MlpSpec(hidden_size=[64], output_activation="Tanh").model_dump()
    assert dumped["output_activation"] == "Tanh"


def test_nested_mlp_dump_drops_unset_output_activation_too():
    spec = QNetworkSpec(encoder_config=MLP, head_config={"hidden_size": [32]})
    dumped = spec.model_dump()
    assert "output_activation" not in dumped["encoder_config"]
    assert "output_activation" not in dumped["head_config"]


def test_dump_round_trips_including_the_arch_tag():
    spec = QNetworkSpec(
        encoder_config={
            "arch": "cnn",
            "channel_size": [16],
            "kernel_size": [3],
            "stride_size": [1],
        },
        head_config={"hidden_size": [32], "output_activation": "Tanh"},
    )
    dumped = spec.model_dump(mode="json")
    assert dumped["encoder_config"]["arch"] == "cnn"
    assert QNetworkSpec.model_validate(dumped) == spec


# --- strict, schema-equivalent validation ---------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("min_mlp_nodes", "8"), ("min_mlp_nodes", True), ("layer_norm", 1), ("min_mlp_nodes", 1.5)],
)
def test_no_coercion(field, value):
    with pytest.raises(ValidationError) as info:
        MlpSpec.model_validate({"hidden_size": [64], field: value})
    assert info.value.errors()[0]["loc"] == (field,)


def test_integral_float_counts_as_integer_like_json_schema():
    spec = MlpSpec.model_validate({"hidden_size": [64.0], "min_mlp_nodes": 8.0})
    assert spec.hidden_size == [64] and type(spec.min_mlp_nodes) is int


def test_float_field_accepts_integers():
    spec = RLAlgorithmSpec(gamma=1)
    assert spec.gamma == 1.0 and isinstance(spec.gamma, float)


def test_unknown_key_rejected_at_depth():
    with pytest.raises(ValidationError) as info:
        QNetworkSpec.model_validate({"encoder_config": {**MLP, "dropout": 0.1}, "head_config": MLP})
    (error,) = info.value.errors()
    assert error["type"] == "extra_forbidden" and error["loc"][-1] == "dropout"


def test_rule_errors_reported_with_field_errors():
    with pytest.raises(ValidationError) as info:
        MlpSpec.model_validate({"hidden_size": [4], "activation": "relu"})
    kinds = {(e["loc"], e["type"]) for e in info.value.errors()}
    assert kinds == {(("activation",), "literal_error"), (("hidden_size",), "cross_field")}


def test_rule_uses_defaults_of_absent_fields():
    with pytest.raises(ValidationError, match=r"must be >= min_mlp_nodes \(8\), got 4"):
        MlpSpec(hidden_size=[4])


def test_an_omitted_training_section_is_the_defaults():
    manifest = parse_manifest(
        {"algorithm": {"name": "DQN"}, "environment": {"name": "CartPole-v1"}}
    )
    assert manifest.training == TrainingSpec()


# --- one-pass validation: nested specs keep every check --------------------------------


def test_rules_of_nested_specs_are_checked_in_the_parent():
    doc = {"encoder_config": {**MLP, "hidden_size": [4]}, "head_config": {"hidden_size": [4]}}
    with pytest.raises(ValidationError) as info:
        QNetworkSpec.model_validate(doc)
    found = {(e["loc"], e["type"]) for e in info.value.errors()}
    assert found == {
        (("encoder_config", "mlp", "hidden_size"), "cross_field"),
        (("head_config", "hidden_size"), "cross_field"),
    }


def test_nested_integral_floats_become_ints_in_integer_fields_only():
    spec = QNetworkSpec.model_validate(
        {"encoder_config": {**MLP, "hidden_size": [64.0]}, "head_config": {"hidden_size": [8.0]}}
    )
    assert spec.encoder_config.hidden_size == [64] and spec.head_config.hidden_size == [8]
    assert all(type(n) is int for n in spec.encoder_config.hidden_size)
    env = GymEnvSpec(name="CartPole-v1", config={"gravity": 10.0})
    assert type(env.config["gravity"]) is float  # an open map keeps its floats


def test_validation_leaves_the_document_untouched():
    doc = {"encoder_config": {**MLP, "hidden_size": [64.0]}, "head_config": {"hidden_size": [8]}}
    QNetworkSpec.model_validate(doc)
    assert doc["encoder_config"]["hidden_size"] == [64.0]
    assert type(doc["encoder_config"]["hidden_size"][0]) is float


def test_existing_nested_instance_is_accepted_as_made():
    head = MlpSpec(hidden_size=[32])
    spec = QNetworkSpec(encoder_config=MlpSpec(hidden_size=[16]), head_config=head)
    assert spec.head_config is head or spec.head_config == head


def test_json_documents_take_the_same_path():
    assert DQNSpec.model_validate_json('{"batch_size": 64.0}').batch_size == 64
    with pytest.raises(ValidationError, match="must be >= min_mlp_nodes"):
        MlpSpec.model_validate_json('{"hidden_size": [4]}')


# --- non-finite numbers: JSON has none, so no valid document holds one ------------------


@pytest.mark.parametrize(
    ("build", "loc"),
    [
        (lambda: DQNSpec(lr=float("inf")), ("lr",)),
        (lambda: DQNSpec(lr=1e400), ("lr",)),  # a literal too large for a float is inf
        (lambda: DQNSpec(lr=float("-inf")), ("lr",)),
        (lambda: DQNSpec.model_validate({"gamma": float("nan")}), ("gamma",)),
        (lambda: TrainingSpec(target_score=float("nan")), ("target_score",)),
        (lambda: GymEnvSpec(name="x", config={"g": [1.0, float("inf")]}), ("config", "g", 1)),
        (
            lambda: GymEnvSpec(
                name="x", wrappers=[{"wrapper": "a.b", "kwargs": {"k": {"deep": float("nan")}}}]
            ),
            ("wrappers", 0, "kwargs", "k", "deep"),
        ),
        (
            lambda: QNetworkSpec.model_validate(
                {"encoder_config": MLP, "head_config": MLP, "random_seed": float("inf")}
            ),
            ("random_seed",),
        ),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_field(build, loc):
    with pytest.raises(ValidationError) as info:
        build()
    (error,) = info.value.errors()
    assert error["loc"] == loc
    assert error["type"] in ("finite_number", "int_type")
    if error["type"] == "finite_number":
        assert error["msg"] == "Input should be a finite number"


def test_non_finite_numbers_in_a_manifest_are_located():
    from agilerl.models import parse_manifest

    doc = {
        "algorithm": {"name": "DQN", "lr": float("inf")},
        "environment": {"name": "CartPole-v1", "config": {"g": float("nan")}},
        "training": {"target_score": float("nan")},
    }
    with pytest.raises(SpecError) as info:
        parse_manifest(doc)
    found = {issue.dotted_path: issue.message for issue in info.value.issues}
    assert found == {
        "algorithm.lr": "Input should be a finite number",
        "environment.config.g": "Input should be a finite number",
        "training.target_score": "Input should be a finite number",
    }


def test_min_equal_to_max_is_allowed():
    spec = MlpSpec(hidden_size=[16, 16], min_hidden_layers=2, max_hidden_layers=2)
    assert spec.min_hidden_layers == spec.max_hidden_layers


def test_spec_error_names_the_document_path_without_union_tags():
    doc = {
        "encoder_config": {
            "arch": "cnn",
            "channel_size": [16],
            "kernel_size": [3, 3],
            "stride_size": [1],
        },
        "head_config": {"hidden_size": ["64"]},
    }
    with pytest.raises(SpecError) as info:
        parse_spec(QNetworkSpec, doc)
    paths = {issue.dotted_path: issue for issue in info.value.issues}
    assert set(paths) == {"encoder_config.kernel_size", "head_config.hidden_size[0]"}
    assert paths["encoder_config.kernel_size"].value == [3, 3]
    assert "one entry per entry of channel_size" in paths["encoder_config.kernel_size"].message
    assert paths["head_config.hidden_size[0]"].value == "64"
    assert "head_config.hidden_size[0]: Input should be a valid integer (found '64')" in str(
        info.value
    )


def test_missing_field_is_named():
    with pytest.raises(SpecError, match=r"head_config: required field is missing"):
        parse_spec(QNetworkSpec, {"encoder_config": MLP})


# --- algorithm facts, algo_class, training function --------------------------------------


def test_facts_declared_in_the_schema():
    assert DQNSpec.agent_type is AgentType.SingleAgent and DQNSpec.off_policy
    assert not PPOSpec.off_policy
    assert MultiAgentRLAlgorithmSpec.agent_type is AgentType.MultiAgent
    assert LLMAlgorithmSpec.agent_type is AgentType.LLMAgent
    assert PPOSpec().name == "PPO"


def test_algo_class_without_implementation_is_a_clear_error(monkeypatch):
    import agilerl.algorithms

    monkeypatch.delitem(agilerl.algorithms._LAZY, "CQN")  # an engine without CQN
    with pytest.raises(AlgorithmNotAvailableError, match="'CQN' has a spec but"):
        CQNSpec.algo_class()


def test_algo_class_and_training_fn_resolve_to_the_engine():
    import agilerl.algorithms
    import agilerl.training

    assert DQNSpec.algo_class() is agilerl.algorithms.DQN
    assert PPOSpec.algo_class() is agilerl.algorithms.PPO
    assert DQNSpec.get_training_fn() is agilerl.training.train_off_policy
    assert PPOSpec.get_training_fn() is agilerl.training.train_on_policy


def test_base_get_training_fn_raises():
    with pytest.raises(NotImplementedError):
        AlgorithmSpec.get_training_fn()
    with pytest.raises(NotImplementedError):
        RLAlgorithmSpec.get_training_fn()


def test_dqn_training_fn_is_resolved_lazily(fake_engine):
    assert DQNSpec.get_training_fn() is fake_engine.training.train_off_policy
    assert PPOSpec.get_training_fn() is fake_engine.training.train_on_policy


def test_training_fn_missing_from_engine_is_a_clear_error(monkeypatch):
    import agilerl.training

    # an engine without the multi-agent loops (this one has them): its table of
    # AgileRL-named entry points lacks the name
    monkeypatch.delitem(agilerl.training.ENTRY_POINTS, "train_multi_agent_off_policy")
    with pytest.raises(
        AlgorithmNotAvailableError, match="agilerl.training.train_multi_agent_off_policy"
    ):
        MADDPGSpec.get_training_fn()


# --- build_algorithm ---------------------------------------------------------------------


@pytest.fixture
def fake_engine(monkeypatch):
    """Stand-in ``agilerl.algorithms`` / ``agilerl.training`` recording constructor calls."""

    class Recorder:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            self.index = kwargs["index"]
            self.loaded = None

        def load_checkpoint(self, path):
            self.loaded = path
            self.index = 99  # a checkpoint carries the index of the run that saved it

    algorithms = types.ModuleType("agilerl.algorithms")
    algorithms.DQN = type("DQN", (Recorder,), {})
    algorithms.PPO = type("PPO", (Recorder,), {})
    algorithms.LLMAlgorithm = type("LLMAlgorithm", (Recorder,), {})
    algorithms.MultiAgentRLAlgorithm = type("MultiAgentRLAlgorithm", (Recorder,), {})
    training = types.ModuleType("agilerl.training")
    training.train_off_policy = lambda: "off"
    training.train_on_policy = lambda: "on"
    monkeypatch.setitem(sys.modules, "agilerl.algorithms", algorithms)
    monkeypatch.setitem(sys.modules, "agilerl.training", training)
    return SimpleNamespace(algorithms=algorithms, training=training)


def test_build_algorithm_names_every_missing_argument():
    with pytest.raises(ValueError) as info:
        DQNSpec().build_algorithm(action_space="A")
    message = str(info.value)
    assert "observation_space" in message and "index" in message and "action_space" not in message


def test_multi_agent_build_names_missing_arguments():
    with pytest.raises(ValueError, match="observation_spaces, action_spaces, index"):
        MultiAgentRLAlgorithmSpec().build_algorithm()


def test_llm_build_requires_tokenizer():
    with pytest.raises(ValueError, match="tokenizer"):
        LLMAlgorithmSpec().build_algorithm()


def test_build_forwards_every_field_with_spec_defaults(fake_engine):
    spec = DQNSpec(gamma=0.9)
    algo = spec.build_algorithm(observation_space="O", action_space="A", index=3)
    assert isinstance(algo, fake_engine.algorithms.DQN)
    runtime = {
        "observation_space": "O",
        "action_space": "A",
        "index": 3,
        "device": "cpu",
        "accelerator": None,
    }
    fields = {name: getattr(spec, name) for name in DQNSpec.model_fields}
    assert algo.kwargs == {**runtime, **fields}
    assert algo.kwargs["batch_size"] == 128  # unset: the schema's default reaches the algorithm
    assert algo.kwargs["gamma"] == 0.9


def test_resume_loads_checkpoint_and_keeps_caller_index(fake_engine):
    algo = PPOSpec().build_algorithm("O", "A", index=2, resume_from_checkpoint="ckpt.pt")
    assert algo.loaded == "ckpt.pt" and algo.index == 2


def test_base_spec_cannot_build():
    with pytest.raises(NotImplementedError):
        AlgorithmSpec().build_algorithm()


# --- get_training_kwargs -----------------------------------------------------------------

TRAINING = SimpleNamespace(
    eval_steps=None,
    eval_loop=1,
    target_score=200.0,
    checkpoint_steps=None,
    checkpoint_path=None,
    overwrite_checkpoints=False,
    learning_delay=100,
    eps_start=1.0,
    eps_end=0.1,
    eps_decay=None,
    evaluation_interval=10,
    num_epochs=None,
)
ENV = SimpleNamespace(name="CartPole-v1")


def test_off_policy_training_kwargs():
    kwargs = DQNSpec().get_training_kwargs(training=TRAINING, env_spec=ENV, memory="M")
    assert kwargs["memory"] == "M" and kwargs["learning_delay"] == 100
    assert (
        kwargs["eps_start"] == 1.0 and "eps_decay" not in kwargs and "n_step_memory" not in kwargs
    )
    assert (
        kwargs["env_name"] == "CartPole-v1"
        and kwargs["algo"] == "DQN"
        and kwargs["target"] == 200.0
    )


def test_on_policy_training_kwargs_have_no_memory():
    kwargs = PPOSpec().get_training_kwargs(training=TRAINING, env_spec=ENV, memory="M")
    assert "memory" not in kwargs and "learning_delay" not in kwargs


def test_llm_training_kwargs_skip_unset():
    kwargs = LLMAlgorithmSpec().get_training_kwargs(training=TRAINING, env_spec=ENV)
    assert kwargs == {"evaluation_interval": 10}


def test_integral_floats_in_open_maps_reach_their_user_untouched():
    from agilerl.models import parse_manifest

    manifest = parse_manifest(
        {
            "algorithm": {"name": "DQN", "batch_size": 64.0},
            "environment": {"name": "X", "config": {"g": 9.0}},
        }
    )
    assert manifest.algorithm.batch_size == 64 and type(manifest.algorithm.batch_size) is int
    assert type(manifest.environment.config["g"]) is float
