"""The concrete algorithm specs: registration, algorithm facts, defaults and rules.

Every fact checked here is declared in ``schemas/<algorithm>.schema.json``; rules are
checked through pydantic and the Python ``jsonschema`` validator alike.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

import agilerl.models as models
from agilerl.files.schema import schema_documents, validator_for
from agilerl.models import (
    ALGO_REGISTRY,
    AgentType,
    CISPOSpec,
    CQNSpec,
    DDPGSpec,
    DPOSpec,
    DQNSpec,
    GRPOSpec,
    GSPOSpec,
    IPPOSpec,
    LLMAlgorithmSpec,
    LLMPPOSpec,
    LLMREINFORCESpec,
    MADDPGSpec,
    MATD3Spec,
    MultiAgentRLAlgorithmSpec,
    NeuralTSSpec,
    NeuralUCBSpec,
    PPOSpec,
    RainbowDQNSpec,
    RLAlgorithmSpec,
    SFTSpec,
    TD3Spec,
)
from agilerl.models.base import LLMAlgorithmBase, MultiAgentRLAlgorithmBase, RLAlgorithmBase
from agilerl.models.standard_rules import is_rule_statement

S, M, L = AgentType.SingleAgent, AgentType.MultiAgent, AgentType.LLMAgent

# name: (spec, schema file, agent type, off_policy, training fn, network spec, evo steps, env type)
FACTS: dict[str, tuple[Any, ...]] = {
    "DQN": (DQNSpec, "dqn", S, True, "train_off_policy", "QNetworkSpec", 10000, None),
    "RainbowDQN": (
        RainbowDQNSpec,
        "rainbow_dqn",
        S,
        True,
        "train_off_policy",
        "RainbowQNetworkSpec",
        10000,
        None,
    ),
    "DDPG": (DDPGSpec, "ddpg", S, True, "train_off_policy", "DeterministicActorSpec", 10000, None),
    "TD3": (TD3Spec, "td3", S, True, "train_off_policy", "DeterministicActorSpec", 10000, None),
    "PPO": (PPOSpec, "ppo", S, False, "train_on_policy", "StochasticActorSpec", 10000, None),
    "CQN": (
        CQNSpec,
        "cqn",
        AgentType.OfflineAgent,
        False,
        "train_offline",
        "QNetworkSpec",
        5000,
        None,
    ),
    "NeuralUCB": (
        NeuralUCBSpec,
        "neural_ucb",
        AgentType.BanditAgent,
        False,
        "train_bandits",
        "QNetworkSpec",
        500,
        None,
    ),
    "NeuralTS": (
        NeuralTSSpec,
        "neural_ts",
        AgentType.BanditAgent,
        False,
        "train_bandits",
        "QNetworkSpec",
        500,
        None,
    ),
    "IPPO": (
        IPPOSpec,
        "ippo",
        M,
        False,
        "train_multi_agent_on_policy",
        "StochasticActorSpec",
        10000,
        None,
    ),
    "MADDPG": (
        MADDPGSpec,
        "maddpg",
        M,
        True,
        "train_multi_agent_off_policy",
        "DeterministicActorSpec",
        10000,
        None,
    ),
    "MATD3": (
        MATD3Spec,
        "matd3",
        M,
        True,
        "train_multi_agent_off_policy",
        "DeterministicActorSpec",
        10000,
        None,
    ),
    "GRPO": (
        GRPOSpec,
        "grpo",
        L,
        False,
        "finetune_llm_reasoning",
        "FinetuningNetworkSpec",
        5,
        "reasoning",
    ),
    "GSPO": (
        GSPOSpec,
        "gspo",
        L,
        False,
        "finetune_llm_reasoning",
        "FinetuningNetworkSpec",
        5,
        "reasoning",
    ),
    "CISPO": (
        CISPOSpec,
        "cispo",
        L,
        False,
        "finetune_llm_reasoning",
        "FinetuningNetworkSpec",
        5,
        "reasoning",
    ),
    "LLMREINFORCE": (
        LLMREINFORCESpec,
        "llm_reinforce",
        L,
        False,
        "finetune_llm_reasoning",
        "FinetuningNetworkSpec",
        5,
        "reasoning",
    ),
    "LLMPPO": (
        LLMPPOSpec,
        "llm_ppo",
        L,
        False,
        "finetune_llm_reasoning",
        "FinetuningNetworkSpec",
        5,
        "reasoning",
    ),
    "DPO": (
        DPOSpec,
        "dpo",
        L,
        False,
        "finetune_llm_preference",
        "FinetuningNetworkSpec",
        5,
        "preference",
    ),
    "SFT": (SFTSpec, "sft", L, False, "finetune_llm_sft", "FinetuningNetworkSpec", 5, "sft"),
}

# Concrete specs derive from their family's fields fragment (and so from its base class),
# not from the closed family spec (RLAlgorithmSpec & co. are siblings).
FAMILY = {S: RLAlgorithmBase, M: MultiAgentRLAlgorithmBase, L: LLMAlgorithmBase}
FAMILY[AgentType.OfflineAgent] = FAMILY[AgentType.BanditAgent] = RLAlgorithmBase

# The smallest valid document of each spec (GRPO and its kin GSPO, CISPO require group_size).
MINIMAL: dict[str, dict[str, Any]] = {name: {} for name in FACTS}
MINIMAL["GRPO"] = MINIMAL["GSPO"] = MINIMAL["CISPO"] = {"group_size": 8}


def verdicts(name: str, doc: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    """Error locations from pydantic and from the schema (Python jsonschema).

    When a subschema of ``allOf`` fails, JSON Schema drops its annotations, so
    ``unevaluatedProperties`` also flags every property that subschema evaluated: a
    consequence, not the fault, left out here when other errors exist.
    """
    spec = FACTS[name][0]
    try:
        spec.model_validate(doc)
        by_pydantic: list[tuple] = []
    except ValidationError as error:
        by_pydantic = sorted(tuple(e["loc"]) for e in error.errors())
    errors = list(validator_for(spec.__name__).iter_errors(doc))
    faults = [e for e in errors if e.validator != "unevaluatedProperties"] or errors
    by_schema = sorted(place for e in faults for place in _places(e))
    return by_pydantic, by_schema


def _places(error: Any) -> list[tuple]:
    """Where a schema error is: JSON Schema puts a ``required`` one at the object, pydantic
    at the missing key (a rule stated in standard keywords, GRPO's vllm_config, fails so)."""
    path = tuple(error.absolute_path)
    if error.validator == "required":
        return [(*path, name) for name in error.validator_value if name not in error.instance]
    return [path]


# --- registration and facts ---------------------------------------------------------------


def test_every_algorithm_is_registered_exported_and_has_a_schema():
    assert set(FACTS) <= set(ALGO_REGISTRY.names())
    for name, (spec, file, *_rest) in FACTS.items():
        assert ALGO_REGISTRY.get(name).spec_cls is spec
        assert getattr(models, spec.__name__) is spec and spec.__name__ in models.__all__
        assert schema_documents()[f"{file}.schema.json"]["title"] == spec.__name__


@pytest.mark.parametrize("name", sorted(FACTS))
def test_algorithm_facts(name):
    spec, _file, agent_type, off_policy, training_fn, network, evo_steps, env_type = FACTS[name]
    assert spec.agent_type is agent_type
    assert spec.off_policy is off_policy
    assert spec.offline is (agent_type is AgentType.OfflineAgent)
    assert spec.bandit is (agent_type is AgentType.BanditAgent)
    assert spec.training_fn_name == training_fn
    assert spec.network_spec_name == network
    assert spec.default_evo_steps == evo_steps
    assert getattr(spec, "env_type", None) == env_type
    assert issubclass(spec, FAMILY[agent_type])
    assert spec(**MINIMAL[name]).name == name


def test_only_cqn_is_offline_and_only_the_neural_bandits_are_bandits():
    assert [n for n, (spec, *_r) in FACTS.items() if spec.offline] == ["CQN"]
    assert [n for n, (spec, *_r) in FACTS.items() if spec.bandit] == ["NeuralUCB", "NeuralTS"]


def test_family_bases_keep_the_base_facts():
    for base in (RLAlgorithmSpec, MultiAgentRLAlgorithmSpec, LLMAlgorithmSpec):
        assert base.network_spec_name is None
        assert not (base.offline or base.bandit or base.off_policy)
    assert RLAlgorithmSpec.default_evo_steps == MultiAgentRLAlgorithmSpec.default_evo_steps == 10000
    assert LLMAlgorithmSpec.default_evo_steps == 5  # LLM runs evolve every few steps
    assert LLMAlgorithmSpec.env_type is None


@pytest.mark.parametrize("name", sorted(FACTS))
def test_minimal_document_is_valid_and_closed(name):
    spec = FACTS[name][0]
    assert verdicts(name, MINIMAL[name]) == ([], [])
    dumped = spec(**MINIMAL[name]).model_dump(mode="json")
    assert verdicts(name, dumped) == ([], [])  # a dump loads back
    assert spec.model_validate(dumped) == spec(**MINIMAL[name])
    assert verdicts(name, {**MINIMAL[name], "no_such_field": 1}) == (
        [("no_such_field",)],
        [()],  # unevaluatedProperties reports at the object
    )


# --- defaults -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "field", "default"),
    [
        ("DQN", "tau", 0.001),
        ("DQN", "double", False),
        ("DQN", "lr", 1e-4),
        ("DQN", "cudagraphs", False),
        ("DQN", "learn_step", 5),  # from the single-agent family
        ("DQN", "batch_size", 128),
        ("RainbowDQN", "num_atoms", 51),
        ("RainbowDQN", "v_min", -200.0),
        ("RainbowDQN", "v_max", 200.0),
        ("RainbowDQN", "n_step", 3),
        ("RainbowDQN", "prior_eps", 1e-6),
        ("DDPG", "tau", 0.001),
        ("DDPG", "O_U_noise", True),
        ("DDPG", "share_encoders", False),
        ("TD3", "tau", 0.005),
        ("TD3", "policy_freq", 2),
        ("PPO", "learn_step", 2048),  # overrides the family's 5
        ("PPO", "num_envs", 1),
        ("PPO", "target_kl", None),
        ("PPO", "max_seq_len", 32),
        ("PPO", "share_encoders", True),
        ("PPO", "bptt_sequence_type", "chunked"),
        ("PPO", "action_std_init", 0.6),
        ("CQN", "tau", 0.001),
        ("NeuralUCB", "learn_step", 2),
        ("NeuralUCB", "gamma", 1.0),
        ("NeuralUCB", "lr", 1e-3),
        ("NeuralUCB", "reg", 0.000625),
        ("NeuralTS", "learn_step", 2),
        ("NeuralTS", "lr", 3e-3),
        ("IPPO", "learn_step", 2048),
        ("IPPO", "action_std_init", 0.0),
        ("IPPO", "action_batch_size", None),
        ("IPPO", "torch_compiler", None),
        ("MADDPG", "lr_actor", 1e-3),
        ("MADDPG", "lr_critic", 1e-2),
        ("MADDPG", "tau", 0.01),
        ("MATD3", "tau", 0.015),
        ("MATD3", "policy_freq", 2),
        ("GRPO", "lr", 5e-6),
        ("GRPO", "max_output_tokens", 1024),
        ("GRPO", "min_output_tokens", None),
        ("GRPO", "use_vllm", False),
        ("GRPO", "vllm_config", None),
        ("GRPO", "adv_norm", "mean_std"),
        ("GRPO", "loss_norm", "micro_batch"),
        ("GRPO", "beta", 0.001),  # from the LLM family
        # LLM-PPO: the reference spec's defaults (its constructor's differ, see the docs).
        ("LLMPPO", "lr_actor", 5e-6),
        ("LLMPPO", "lr_critic", 5e-6),
        ("LLMPPO", "vf_coef", 0.5),
        ("LLMPPO", "clip_coef", 0.2),
        ("LLMPPO", "gamma", 0.99),
        ("LLMPPO", "gae_lambda", 0.95),
        ("LLMPPO", "temperature", 0.9),
        ("LLMPPO", "action_granularity", "auto"),
        ("LLMPPO", "turn_level_clip", True),
        ("LLMPPO", "importance_sampling_level", "auto"),
        ("LLMPPO", "advantage_granularity", "auto"),
        ("LLMPPO", "turn_ratio_pooling", "sum"),
        ("LLMPPO", "whiten_advantages", True),
        ("LLMPPO", "beta", 0.001),
        ("DPO", "lr", 5e-6),
        ("SFT", "lr", 5e-5),
    ],
)
def test_defaults(name, field, default):
    spec = FACTS[name][0]
    assert getattr(spec(**MINIMAL[name]), field) == default


def test_family_default_is_untouched_by_an_override():
    assert RLAlgorithmSpec().learn_step == 5 and DQNSpec().learn_step == 5
    assert RLAlgorithmSpec().gamma == 0.99 and NeuralUCBSpec().gamma == 1.0


def test_field_sets_differ_where_the_reference_does():
    assert "policy_freq" not in MADDPGSpec.model_fields
    assert "share_encoders" not in MATD3Spec.model_fields
    assert "cudagraphs" not in CQNSpec.model_fields
    assert "torch_compiler" in IPPOSpec.model_fields


def test_ppo_rollout_buffer_config_is_a_closed_object_defaulting_to_empty():
    assert PPOSpec().model_dump()["rollout_buffer_config"] == {"use_gae": True}
    assert PPOSpec(rollout_buffer_config={"use_gae": False}).rollout_buffer_config.use_gae is False
    assert verdicts("PPO", {"rollout_buffer_config": {"gae": True}}) == (
        [("rollout_buffer_config", "gae")],
        [("rollout_buffer_config",)],
    )


def test_grpo_requires_group_size():
    assert verdicts("GRPO", {}) == ([("group_size",)], [("group_size",)])
    assert verdicts("GRPO", {"group_size": 0}) == ([("group_size",)], [("group_size",)])


@pytest.mark.parametrize(
    ("name", "doc", "loc"),
    [
        ("DQN", {"tau": 1.5}, "tau"),
        ("DQN", {"lr": -1.0}, "lr"),
        ("DDPG", {"dt": 0.0}, "dt"),
        ("TD3", {"policy_freq": 0}, "policy_freq"),
        ("PPO", {"learn_step": 0}, "learn_step"),
        ("PPO", {"bptt_sequence_type": "random"}, "bptt_sequence_type"),
        ("PPO", {"max_seq_len": 0}, "max_seq_len"),
        ("PPO", {"target_kl": -0.1}, "target_kl"),
        ("NeuralUCB", {"gamma": 1.5}, "gamma"),  # the family's [0, 1] still applies
        ("IPPO", {"action_batch_size": 0}, "action_batch_size"),
        ("MATD3", {"tau": 2.0}, "tau"),
        ("GRPO", {"group_size": 8, "temperature": 0.0}, "temperature"),
        ("GRPO", {"group_size": 8, "adv_clip_range": 0.0}, "adv_clip_range"),
        (
            "GRPO",
            {"group_size": 8, "importance_sampling_level": "seq"},
            "importance_sampling_level",
        ),
        ("GRPO", {"group_size": 8, "max_output_tokens": 0}, "max_output_tokens"),
        ("DPO", {"lr": "5e-6"}, "lr"),  # strict: no string coercion
        ("SFT", {"lr": -1e-5}, "lr"),
    ],
)
def test_bounds_are_enforced_by_both_validators(name, doc, loc):
    by_pydantic, by_schema = verdicts(name, doc)
    assert by_pydantic and all(path[0] == loc for path in by_pydantic)
    assert by_schema and all(path[0] == loc for path in by_schema)


def test_nullable_fields_accept_null():
    assert verdicts("PPO", {"max_seq_len": None, "target_kl": None}) == ([], [])
    assert verdicts("GRPO", {"group_size": 4, "max_output_tokens": None}) == ([], [])


# --- rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "valid"),
    [
        ({"v_min": -10.0, "v_max": 10.0}, True),
        ({"v_min": 10.0, "v_max": 10.0}, False),  # strictly below
        ({"v_min": 20.0, "v_max": 10.0}, False),
        ({"v_min": 250.0}, False),  # against the default v_max 200
        ({"v_max": -250.0}, False),
    ],
)
def test_rainbow_v_min_below_v_max(doc, valid):
    expected = ([], []) if valid else ([("v_min",)], [("v_min",)])
    assert verdicts("RainbowDQN", doc) == expected


def test_rainbow_rule_message():
    with pytest.raises(ValidationError, match=r"v_min must be < v_max \(10\), got 10"):
        RainbowDQNSpec(v_min=10.0, v_max=10.0)


def test_grpo_use_vllm_requires_vllm_config():
    assert verdicts("GRPO", {"group_size": 8, "use_vllm": True}) == (
        [("vllm_config",)],
        [("vllm_config",)],
    )
    with pytest.raises(ValidationError, match="vllm_config is required when use_vllm is true"):
        GRPOSpec(group_size=8, use_vllm=True, vllm_config=None)
    assert verdicts("GRPO", {"group_size": 8, "use_vllm": True, "vllm_config": {}}) == ([], [])
    spec = GRPOSpec(group_size=8, use_vllm=True, vllm_config={"gpu_memory_utilization": 0.5})
    assert spec.vllm_config.gpu_memory_utilization == 0.5 and spec.vllm_config.max_num_seqs == 8
    # a config without use_vllm is allowed (and simply unused)
    assert verdicts("GRPO", {"group_size": 8, "vllm_config": {}}) == ([], [])


def test_grpo_min_output_tokens_at_most_max_output_tokens():
    ok = {"group_size": 8, "min_output_tokens": 1024}  # equal to the default max
    assert verdicts("GRPO", ok) == ([], [])
    bad = {"group_size": 8, "min_output_tokens": 1025}
    assert verdicts("GRPO", bad) == ([("min_output_tokens",)], [("min_output_tokens",)])
    bad = {"group_size": 8, "min_output_tokens": 10, "max_output_tokens": 5}
    assert verdicts("GRPO", bad) == ([("min_output_tokens",)], [("min_output_tokens",)])
    # rules skip nulls: no maximum, anything goes
    unbounded = {"group_size": 8, "min_output_tokens": 10**6, "max_output_tokens": None}
    assert verdicts("GRPO", unbounded) == ([], [])


# --- LLM sub-configs ----------------------------------------------------------------------


def test_vllm_config_is_strict_and_closed():
    doc = {"group_size": 8, "use_vllm": True, "vllm_config": {"tensor_parallel": 2}}
    assert verdicts("GRPO", doc) == (
        [("vllm_config", "tensor_parallel")],
        [("vllm_config",)],
    )
    for bad in (
        {"gpu_memory_utilization": 0.0},
        {"gpu_memory_utilization": 1.5},
        {"sleep_mode_level": 3},
        {"max_num_seqs": "8"},
        {"enforce_eager": 1},
    ):
        by_pydantic, by_schema = verdicts("GRPO", {"group_size": 8, "vllm_config": bad})
        assert by_pydantic and by_schema, bad
        assert all(path[0] == "vllm_config" for path in by_pydantic + by_schema)


def test_vllm_config_defaults():
    config = GRPOSpec(group_size=8, vllm_config={}).vllm_config
    assert config.model_dump() == {
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.3,
        "max_num_seqs": 8,
        "enforce_eager": None,
        "sleep_mode": False,
        "sleep_mode_level": 1,
        "max_num_batched_tokens": None,
        "dtype": None,
        "quantization": None,
        "max_lora_rank": None,
        "lora_staging_dir": None,
        "strip_multimodal_towers": False,
    }


def test_cosine_lr_schedule_config():
    spec = GRPOSpec(group_size=8, cosine_lr_schedule_config={"warmup_proportion": 0.1})
    assert spec.cosine_lr_schedule_config.num_epochs == 100
    assert spec.cosine_lr_schedule_config.warmup_proportion == 0.1
    doc = {"group_size": 8, "cosine_lr_schedule_config": {"num_epochs": 0, "extra": 1}}
    by_pydantic, by_schema = verdicts("GRPO", doc)
    assert ("cosine_lr_schedule_config", "num_epochs") in by_pydantic
    assert ("cosine_lr_schedule_config", "extra") in by_pydantic
    assert by_schema and all(path[0] == "cosine_lr_schedule_config" for path in by_schema)


def test_shared_llm_sub_configs_live_in_the_llm_family_schema():
    defs = schema_documents()["llm_algorithm.schema.json"]["$defs"]
    assert defs["VLLMConfig"]["title"] == "VLLMConfig"
    assert defs["CosineLRScheduleConfig"]["title"] == "CosineLRScheduleConfig"


# --- schema shape -------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FACTS))
def test_fields_live_in_a_fragment_for_the_manifest(name):
    spec, file, agent_type, *_rest = FACTS[name]
    doc = schema_documents()[f"{file}.schema.json"]
    assert doc["$id"] == f"https://agilerl.dev/schemas/{file}.schema.json"
    assert doc["allOf"] == [{"$ref": f"#/$defs/{name}Fields"}]
    assert doc["unevaluatedProperties"] is False
    fragment = doc["$defs"][f"{name}Fields"]
    assert fragment["title"] == f"{name}Fields"
    family = {
        S: "rl_algorithm.schema.json#/$defs/RLAlgorithmFields",
        M: "multi_agent_rl_algorithm.schema.json#/$defs/MultiAgentRLAlgorithmFields",
        L: "llm_algorithm.schema.json#/$defs/LLMAlgorithmFields",
    }.get(agent_type, "rl_algorithm.schema.json#/$defs/RLAlgorithmFields")
    # Its allOf fragments (related specs build on a group they share, as GSPO on GRPO's,
    # TD3 on DDPG's, IPPO on PPO's beside the multi-agent family's) reach its family's.
    assert family in _fragments_reached(file, fragment), f"{name}Fields does not build on {family}"
    # every own property (CQN has none: all are DQN's) is a model field
    assert set(fragment.get("properties", {})) <= set(spec.model_fields)


def _fragments_reached(file: str, fragment: dict[str, Any]) -> set[str]:
    """Every ``$ref`` (``file.schema.json#/$defs/Name``) a fragment builds on through its
    ``allOf``, directly or through the fragments it names."""
    reached: set[str] = set()
    todo = [(file, fragment)]
    while todo:
        base, node = todo.pop()
        # a rule stated in standard keywords (standard_rules.py) builds on nothing
        for part in filter(lambda entry: not is_rule_statement(entry), node.get("allOf", ())):
            ref = part["$ref"]
            if ref.startswith("#"):  # within the same document
                ref = f"{base}.schema.json{ref}"
            if ref not in reached:
                reached.add(ref)
                target, pointer = ref.split("#")
                defs = schema_documents()[target]["$defs"]
                todo.append((target.removesuffix(".schema.json"), defs[pointer.rsplit("/", 1)[1]]))
    return reached


#: Related algorithms (the design's "The schema states each hyperparameter once"): the
#: second's schema builds on a field group of the first's and declares again none of the
#: first's fields; it declares a field itself only where it differs (TD3's and MATD3's
#: tau, NeuralTS's lr and IPPO's action_std_init have other defaults; GSPO narrows
#: importance_sampling_level, CISPO replaces clip_coef by two bounds).
RELATED = [
    ("DDPG", "TD3"),
    ("MADDPG", "MATD3"),
    ("PPO", "IPPO"),
    ("NeuralUCB", "NeuralTS"),
    ("DQN", "CQN"),
    ("GRPO", "GSPO"),
    ("GRPO", "CISPO"),
]


def _declared(file: str) -> list[tuple[str, Any]]:
    """Every property declaration of a schema file's ``$defs``: (name, its schema)."""
    defs = schema_documents()[f"{file}.schema.json"]["$defs"]
    return [(name, prop) for d in defs.values() for name, prop in d.get("properties", {}).items()]


@pytest.mark.parametrize(("base", "derived"), RELATED, ids=lambda name: name)
def test_a_related_schema_shares_its_bases_group(base, derived):
    base_file, file = FACTS[base][1], FACTS[derived][1]
    fragment = schema_documents()[f"{file}.schema.json"]["$defs"][f"{derived}Fields"]
    shared = {
        ref
        for ref in _fragments_reached(file, fragment)
        if ref.startswith(f"{base_file}.schema.json#")
    }
    assert shared, f"{derived}Fields builds on no field group of {base_file}.schema.json"
    restated = sorted(
        name
        for name, prop in _declared(file)
        if any(name == other and prop == other_prop for other, other_prop in _declared(base_file))
    )
    assert not restated, f"{derived} declares {restated} again, as {base} does"
    # What it declares itself differs from the base's declaration of the same name.
    spec, base_spec = FACTS[derived][0], FACTS[base][0]
    for name, _prop in _declared(file):
        if name in base_spec.model_fields and name in spec.model_fields:
            mine, theirs = spec.model_fields[name], base_spec.model_fields[name]
            assert (mine.default, mine.annotation, mine.metadata) != (
                theirs.default,
                theirs.annotation,
                theirs.metadata,
            ), f"{derived}.{name} is {base}'s: it belongs in the shared group"
