"""The spec layer (``agilerl.models`` and its neighbours) as data, not branches.

* ``get_training_kwargs``: what every registered algorithm hands its training loop, pinned
  as explicit dicts (written down from the behaviour before the agent kinds became a
  table), key order included; the table of agent kinds agrees with the manifest schema.
* A network field the network built for the algorithm would ignore is refused: a
  recurrent PPO's ``network.simba`` (it always builds an LSTM encoder), by the
  ``x-agilerl-rules`` keyword of the manifest schema, so every validator refuses it.
* ``agilerl.models`` imports no engine module (a lookup by name through importlib is the
  one way it reaches the engine), and ``engine_lacks`` stays light.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support import ROOT

from agilerl.cli import main
from agilerl.files.documents import load_document
from agilerl.files.schema import schema_documents, validator_for
from agilerl.models import ALGO_REGISTRY, PPOSpec, load_manifest, parse_manifest
from agilerl.models.algo import (
    AlgorithmSpec,
    LLMAlgorithmSpec,
    MultiAgentRLAlgorithmSpec,
    RLAlgorithmSpec,
)
from agilerl.models.env import (
    BanditEnvSpec,
    GymEnvSpec,
    LLMPreferenceEnvSpec,
    LLMReasoningEnvSpec,
    LLMSftEnvSpec,
    OfflineEnvSpec,
    PzEnvSpec,
)
from agilerl.models.kinds import AGENT_KINDS, AgentType
from agilerl.models.manifest_base import network_section_for
from agilerl.models.standard_rules import is_rule_statement
from agilerl.models.training import TrainingSpec
from agilerl.models.validation import SpecError

while not (ROOT / "pyproject.toml").is_file():  # the tests may live one folder deeper
    ROOT = ROOT.parent

# --- get_training_kwargs ------------------------------------------------------------------

#: Every field the kwargs read, set (and different from its default).
FULL = TrainingSpec(
    max_steps=5000,
    evo_steps=500,
    eval_steps=200,
    eval_loop=3,
    target_score=195.5,
    learning_delay=1000,
    warmup_actions="uniform",
    eps_start=0.9,
    eps_end=0.05,
    eps_decay=0.995,
    checkpoint_steps=1000,
    checkpoint_path="ckpt/run",
    overwrite_checkpoints=True,
    evaluation_interval=4,
    num_epochs=2,
    episode_steps=300,
    sum_scores=False,
)
#: Nothing set: every default.
DEFAULTS = TrainingSpec()
#: Some optional values set, others left null.
PARTIAL = TrainingSpec(eps_start=0.5, checkpoint_path="ckpt", num_epochs=3)

REASONING = {
    "dataset": "data/reasoning.jsonl",
    "reward_file_path": "reward.py",
    "reward_fn_name": "reward",
    "prompt_template": {"user_1": "{question}"},
}


def _environments(max_reward: float | None) -> dict[str, Any]:
    """One environment spec per environment kind (only the LLM reasoning one varies)."""
    return {
        "GymEnvSpec": GymEnvSpec(name="CartPole-v1", num_envs=8),
        "OfflineEnvSpec": OfflineEnvSpec(name="CartPole-v1", dataset_path="data/cartpole.h5"),
        "BanditEnvSpec": BanditEnvSpec(
            name="IRIS", features="data/features.csv", targets="data/targets.csv"
        ),
        "PzEnvSpec": PzEnvSpec(name="mpe2.simple_speaker_listener_v4"),
        "LLMReasoningEnvSpec": LLMReasoningEnvSpec(**REASONING, max_reward=max_reward),
        "LLMPreferenceEnvSpec": LLMPreferenceEnvSpec(dataset="data/preferences.jsonl"),
        "LLMSftEnvSpec": LLMSftEnvSpec(dataset="data/sft.jsonl"),
    }


#: name -> (spec class, the environment spec it is given). The registry's algorithms and
#: the family base specs (``AlgorithmSpec`` has no agent type at all).
SPECS: dict[str, tuple[Any, str]] = {
    **{
        name: (ALGO_REGISTRY.get(name).spec_cls, env)
        for name, env in {
            "CISPO": "LLMReasoningEnvSpec",
            "CQN": "OfflineEnvSpec",
            "DDPG": "GymEnvSpec",
            "DPO": "LLMPreferenceEnvSpec",
            "DQN": "GymEnvSpec",
            "GRPO": "LLMReasoningEnvSpec",
            "GSPO": "LLMReasoningEnvSpec",
            "IPPO": "PzEnvSpec",
            "LLMREINFORCE": "LLMReasoningEnvSpec",
            "LLMPPO": "LLMReasoningEnvSpec",
            "MADDPG": "PzEnvSpec",
            "MATD3": "PzEnvSpec",
            "NeuralTS": "BanditEnvSpec",
            "NeuralUCB": "BanditEnvSpec",
            "PPO": "GymEnvSpec",
            "RainbowDQN": "GymEnvSpec",
            "SFT": "LLMSftEnvSpec",
            "TD3": "GymEnvSpec",
        }.items()
    },
    "Algorithm": (AlgorithmSpec, "GymEnvSpec"),
    "RLAlgorithm": (RLAlgorithmSpec, "GymEnvSpec"),
    "MultiAgentRLAlgorithm": (MultiAgentRLAlgorithmSpec, "PzEnvSpec"),
    "LLMAlgorithm": (LLMAlgorithmSpec, "LLMReasoningEnvSpec"),
}
REQUIRED_FIELDS = {name: {"group_size": 4} for name in ("GRPO", "GSPO", "CISPO")}

#: scenario -> (training spec, max_reward of the reasoning env, memory, n_step_memory)
SCENARIOS = {
    "full": (FULL, 1.0, "M", "N"),
    "defaults": (DEFAULTS, None, None, None),
    "partial": (PARTIAL, 2.0, "M", None),
}


def _common(scenario: str, algo: str, env_name: str) -> dict[str, Any]:
    """The kwargs every RL training loop gets, in their order."""
    return {
        "full": {
            "env_name": env_name,
            "algo": algo,
            "eval_steps": 200,
            "eval_loop": 3,
            "target": 195.5,
            "checkpoint": 1000,
            "checkpoint_path": "ckpt/run",
            "overwrite_checkpoints": True,
        },
        "defaults": {
            "env_name": env_name,
            "algo": algo,
            "eval_steps": None,
            "eval_loop": 1,
            "target": None,
            "checkpoint": None,
            "checkpoint_path": None,
            "overwrite_checkpoints": False,
        },
        "partial": {
            "env_name": env_name,
            "algo": algo,
            "eval_steps": None,
            "eval_loop": 1,
            "target": None,
            "checkpoint": None,
            "checkpoint_path": "ckpt",
            "overwrite_checkpoints": False,
        },
    }[scenario]


#: The off-policy additions, in their order, per scenario.
OFF_POLICY = {
    "full": {
        "memory": "M",
        "learning_delay": 1000,
        "eps_start": 0.9,
        "eps_end": 0.05,
        "eps_decay": 0.995,
        "n_step_memory": "N",
    },
    "defaults": {"memory": None, "learning_delay": 0},
    "partial": {"memory": "M", "learning_delay": 0, "eps_start": 0.5},
}
MEMORY = {"full": {"memory": "M"}, "defaults": {"memory": None}, "partial": {"memory": "M"}}
EPISODE_STEPS = {"full": {"episode_steps": 300}, "defaults": {"episode_steps": 500}}
EPISODE_STEPS["partial"] = EPISODE_STEPS["defaults"]
SUM_SCORES = {"full": {"sum_scores": False}, "defaults": {"sum_scores": True}}
SUM_SCORES["partial"] = SUM_SCORES["defaults"]
LLM_REASONING = {
    "full": {
        "evaluation_interval": 4,
        "max_reward": 1.0,
        "checkpoint_steps": 1000,
        "checkpoint_path": "ckpt/run",
        "num_epochs": 2,
    },
    "defaults": {"evaluation_interval": 10},
    "partial": {
        "evaluation_interval": 10,
        "max_reward": 2.0,
        "checkpoint_path": "ckpt",
        "num_epochs": 3,
    },
}
LLM_OTHER = {  # preference and SFT environments have no max_reward
    "full": {
        "evaluation_interval": 4,
        "checkpoint_steps": 1000,
        "checkpoint_path": "ckpt/run",
        "num_epochs": 2,
    },
    "defaults": {"evaluation_interval": 10},
    "partial": {"evaluation_interval": 10, "checkpoint_path": "ckpt", "num_epochs": 3},
}

GYM, OFFLINE, BANDIT, PZ = "CartPole-v1", "CartPole-v1", "IRIS", "mpe2.simple_speaker_listener_v4"


def _cohorts(scenario: str, env_title: str = "GymEnvSpec") -> dict[str, Any]:
    """What a single-agent online loop (and the multi-agent on-policy one) gained with
    cohorts (issue 25): the environment spec (to step a cohort's copies) and
    ``training.cohorts``."""
    training, max_reward, _, _ = SCENARIOS[scenario]
    return {"env_spec": _environments(max_reward)[env_title], "cohorts": training.cohorts}


def _warmup(scenario: str) -> dict[str, Any]:
    """What a single-agent off-policy loop gained with uniform warm-up actions (issue 26):
    ``training.warmup_actions``."""
    return {"warmup_actions": SCENARIOS[scenario][0].warmup_actions}


def expected_kwargs(name: str, scenario: str) -> dict[str, Any]:
    """What ``get_training_kwargs`` returned for ``name`` before the refactor (plus the
    cohort arguments of the single-agent online and multi-agent loops, :func:`_cohorts`)."""
    s = scenario
    return {
        "DQN": {**_common(s, "DQN", GYM), **OFF_POLICY[s], **_warmup(s), **_cohorts(s)},
        "RainbowDQN": {
            **_common(s, "RainbowDQN", GYM),
            **OFF_POLICY[s],
            **_warmup(s),
            **_cohorts(s),
        },
        "DDPG": {**_common(s, "DDPG", GYM), **OFF_POLICY[s], **_warmup(s), **_cohorts(s)},
        "TD3": {**_common(s, "TD3", GYM), **OFF_POLICY[s], **_warmup(s), **_cohorts(s)},
        "PPO": {**_common(s, "PPO", GYM), **_cohorts(s)},
        "CQN": {**_common(s, "CQN", OFFLINE), **MEMORY[s], "cohorts": SCENARIOS[s][0].cohorts},
        "NeuralUCB": {**_common(s, "NeuralUCB", BANDIT), **MEMORY[s], **EPISODE_STEPS[s]},
        "NeuralTS": {**_common(s, "NeuralTS", BANDIT), **MEMORY[s], **EPISODE_STEPS[s]},
        "IPPO": {**_common(s, "IPPO", PZ), **SUM_SCORES[s], **_cohorts(s, "PzEnvSpec")},
        "MADDPG": {
            **_common(s, "MADDPG", PZ),
            **OFF_POLICY[s],
            **SUM_SCORES[s],
            **_cohorts(s, "PzEnvSpec"),
        },
        "MATD3": {
            **_common(s, "MATD3", PZ),
            **OFF_POLICY[s],
            **SUM_SCORES[s],
            **_cohorts(s, "PzEnvSpec"),
        },
        "GRPO": LLM_REASONING[s],
        "GSPO": LLM_REASONING[s],
        "CISPO": LLM_REASONING[s],
        "LLMREINFORCE": LLM_REASONING[s],
        "LLMPPO": LLM_REASONING[s],
        "DPO": LLM_OTHER[s],
        "SFT": LLM_OTHER[s],
        "Algorithm": _common(s, "Algorithm", GYM),
        "RLAlgorithm": {**_common(s, "RLAlgorithm", GYM), **_cohorts(s)},
        "MultiAgentRLAlgorithm": {
            **_common(s, "MultiAgentRLAlgorithm", PZ),
            **SUM_SCORES[s],
            **_cohorts(s, "PzEnvSpec"),
        },
        "LLMAlgorithm": LLM_REASONING[s],
    }[name]


def test_every_registered_algorithm_is_pinned():
    assert set(ALGO_REGISTRY.names()) <= set(SPECS), "pin the new algorithm's training kwargs"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("name", SPECS)
def test_training_kwargs_are_what_they_were(name: str, scenario: str) -> None:
    spec_cls, env_title = SPECS[name]
    training, max_reward, memory, n_step_memory = SCENARIOS[scenario]
    spec = spec_cls(**REQUIRED_FIELDS.get(name, {}))
    kwargs = spec.get_training_kwargs(
        training=training,
        env_spec=_environments(max_reward)[env_title],
        memory=memory,
        n_step_memory=n_step_memory,
    )
    expected = expected_kwargs(name, scenario)
    assert kwargs == expected
    assert list(kwargs) == list(expected)  # the same order too


def test_every_agent_type_has_a_row():
    assert set(AGENT_KINDS) == set(AgentType)


def test_network_sections_match_the_manifest_schema():
    """The schema's if/then (network by algorithm) and the table of agent kinds agree."""
    manifest = schema_documents()["manifest.schema.json"]
    by_name = {}
    # A rule stated in standard keywords (simba beside a recurrent PPO) is no section's choice.
    for clause in filter(lambda entry: not is_rule_statement(entry), manifest["allOf"]):
        names = clause["if"]["properties"]["algorithm"]["properties"]["name"]["enum"]
        network = clause["then"]["properties"].get("network")
        if network:
            (ref,) = [o["$ref"] for o in network["anyOf"] if "$ref" in o]
            title = (
                manifest["$defs"][ref.rsplit("/", 1)[1]]["title"]
                if ref.startswith("#/")
                else schema_documents()[ref]["title"]
            )
            by_name.update(dict.fromkeys(names, title))
    assert set(by_name) == set(ALGO_REGISTRY.names())
    for name, title in by_name.items():
        assert network_section_for(ALGO_REGISTRY.get(name).spec_cls).__name__ == title


# --- fields the network built would ignore -------------------------------------------------

RECURRENT = ROOT / "configs" / "ppo_recurrent.yaml"


def _with_simba(tmp_path: Path, *, arch: bool = True) -> Path:
    """configs/ppo_recurrent.yaml with ``simba: true`` in its network section (and its
    ``arch: lstm`` kept, or removed: the encoder is then inferred, an LSTM all the same)."""
    lines = RECURRENT.read_text(encoding="utf-8").splitlines()
    at = lines.index("  arch: lstm")
    lines[at : at + 1] = ["  arch: lstm", "  simba: true"] if arch else ["  simba: true"]
    path = tmp_path / ("simba.yaml" if arch else "simba_inferred.yaml")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


SIMBA_MESSAGE = "network.simba must not be true when algorithm.recurrent is true: a recurrent PPO"


@pytest.mark.parametrize("arch", [True, False], ids=["arch-lstm", "arch-inferred"])
def test_validate_refuses_simba_on_a_recurrent_ppo(tmp_path, capsys, arch):
    path = _with_simba(tmp_path, arch=arch)
    line = path.read_text(encoding="utf-8").splitlines().index("  simba: true") + 1
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    # with arch: lstm written, simba is ignored twice over (the recurrence, the named arch)
    assert f"{2 if arch else 1} problem(s) with TrainingManifest" in err
    assert f"{path}:{line}:3: network.simba: {SIMBA_MESSAGE}" in err
    assert err.rstrip().endswith("(found True)")
    assert main(["validate", "--format", "json", str(path)]) == 1
    report = json.loads(capsys.readouterr().out)[str(path)]
    errors = report["errors"]
    assert report["valid"] is False and len(errors) == (2 if arch else 1)
    assert {(e["path"], e["line"], e["column"]) for e in errors} == {("network.simba", line, 3)}
    assert any(e["message"].startswith(SIMBA_MESSAGE) for e in errors)


def test_every_way_in_refuses_simba_on_a_recurrent_ppo(tmp_path):
    from agilerl.trainer import LocalTrainer, TrainerError

    path = _with_simba(tmp_path, arch=False)
    document = load_document(path)[0]
    for load in (load_manifest, lambda p: parse_manifest(document), LocalTrainer.from_manifest):
        with pytest.raises(SpecError) as info:
            load(path)
        (issue,) = info.value.issues
        assert issue.path == ("network", "simba") and issue.message.startswith(SIMBA_MESSAGE)
    # a run put together in Python, without a manifest, meets the same rule
    algorithm = PPOSpec(**{k: v for k, v in document["algorithm"].items() if k != "name"})
    with pytest.raises(TrainerError, match=f"network.simba: {SIMBA_MESSAGE}"):
        LocalTrainer(algorithm, document["environment"], network=document["network"])
    # the schema too (Python jsonschema; tests/schemas/test_manifest_cross_language.py adds ajv)
    (error,) = validator_for("TrainingManifest").iter_errors(document)
    assert list(error.absolute_path) == ["network", "simba"]
    assert error.message.startswith(SIMBA_MESSAGE)


def test_a_recurrent_ppo_without_simba_still_validates(capsys):
    assert main(["validate", str(RECURRENT)]) == 0
    assert f"{RECURRENT}: valid (PPO on CartPole-v1)" in capsys.readouterr().out
    document = load_document(RECURRENT)[0]
    network = document["network"]
    for variant in ({**network, "simba": False}, {k: v for k, v in network.items() if k != "arch"}):
        parse_manifest({**document, "network": variant})  # simba false; the LSTM inferred


def test_simba_without_recurrence_still_validates():
    document = load_document(RECURRENT)[0]
    document["algorithm"] = {**document["algorithm"], "recurrent": False}
    del document["algorithm"]["max_seq_len"]
    document["network"] = {
        "simba": True,
        "encoder_config": {"hidden_size": 128, "num_blocks": 2},
        "head_config": {"hidden_size": [64]},
    }
    assert parse_manifest(document).network.simba is True


#: Manifests valid before the rule (every one of them must stay valid).
CORPORA = [ROOT / "configs", *sorted(ROOT.glob("tests/**/agilerl_manifests"))]
SHARED = ROOT.parent / "shared" / "agilerl-manifests"
if SHARED.is_dir():
    CORPORA.append(SHARED)


def test_no_manifest_of_the_corpora_asks_a_recurrent_ppo_for_simba():
    """The rule refuses nothing that was valid: no manifest of configs/ or AgileRL's corpus
    (tests/agilerl_manifests, and ../shared/agilerl-manifests where present) has it, and
    each of those that validates has no rule error (tests/models/test_manifest.py pins which)."""
    checked = 0
    for corpus in CORPORA:
        for path in sorted(corpus.rglob("*.yaml")):
            try:
                load_manifest(path)
            except SpecError as error:
                assert not [i for i in error.issues if "must not be true when" in i.message]
            else:
                # the floor counts this repository's manifests only: a clean clone has no
                # ../shared beside it
                checked += corpus != SHARED
    assert checked >= 39


# --- the spec layer imports no engine module ------------------------------------------------

#: Modules of the spec layer, and the agilerl modules it may import.
SPEC_LAYER = (
    "agilerl.models",
    "agilerl._generated",
    "agilerl.files.documents",
    "agilerl.files.schema",
)


def _spec_layer_files() -> list[Path]:
    package = ROOT / "agilerl"
    return [
        *sorted((package / "models").rglob("*.py")),
        package / "files" / "documents.py",
        package / "files" / "schema.py",
    ]


def _imported(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):  # function-local imports too
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: within the spec layer's own package
                continue
            found.append((node.lineno, node.module or ""))
    return found


def test_the_spec_layer_imports_no_engine_module():
    engine = []
    for path in _spec_layer_files():
        for line, name in _imported(ast.parse(path.read_text(encoding="utf-8"))):
            if (name == "agilerl" or name.startswith("agilerl.")) and not any(
                name == allowed or name.startswith(allowed + ".") for allowed in SPEC_LAYER
            ):
                engine.append(f"{path.relative_to(ROOT)}:{line}: import of {name}")
    assert not engine, "the spec layer reaches the engine by name only:\n" + "\n".join(engine)


def test_the_import_scan_sees_function_local_imports():
    tree = ast.parse(
        "def f():\n    import agilerl.algorithms\n    from agilerl.training import x\n"
    )
    assert [name for _, name in _imported(tree)] == ["agilerl.algorithms", "agilerl.training"]


def test_engine_lacks_imports_no_torch():
    code = (
        "import sys, json; from agilerl.models.base import engine_lacks; "
        "answers = [engine_lacks('DQN'), engine_lacks('NoSuchAlgorithm')]; "
        "print(json.dumps([answers, 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    (known, unknown), torch_loaded = json.loads(out.stdout)
    assert known is None and unknown.startswith("algorithm NoSuchAlgorithm: the engine cannot")
    assert not torch_loaded


def test_the_manifest_rules_check_sections_built_as_specs():
    """A run put together in Python (no manifest) can ask the manifest's rules too."""
    from agilerl.models.algorithms import PPOSpec
    from agilerl.models.manifest import NetworkSection, manifest_rule_issues

    head = {"head_config": {"hidden_size": [64]}}
    sections = {
        "algorithm": PPOSpec(recurrent=True),
        "environment": GymEnvSpec(name="CartPole-v1"),
        "network": NetworkSection(simba=True, **head),
    }
    (issue,) = manifest_rule_issues(sections)
    assert issue.path == ("network", "simba") and issue.message.startswith(SIMBA_MESSAGE)
    assert manifest_rule_issues({**sections, "network": NetworkSection(**head)}) == []
    assert manifest_rule_issues({**sections, "algorithm": PPOSpec()}) == []
    # documents as well, and the other rule of the manifest (one num_envs)
    (issue,) = manifest_rule_issues(
        {"algorithm": {"name": "PPO", "num_envs": 2}, "environment": {"num_envs": 8}}
    )
    assert issue.path == ("algorithm",) and "num_envs" in issue.message


NAMED_ARCH_MESSAGE = "simba only chooses a SimBa encoder where the arch is inferred"


@pytest.mark.parametrize(
    ("network", "named"),
    [
        ({"arch": "mlp", "simba": True}, 'network.arch is "mlp"'),
        ({"arch": "cnn", "simba": True}, 'network.arch is "cnn"'),
        (
            {"simba": True, "encoder_config": {"arch": "mlp", "hidden_size": [64]}},
            'network.encoder_config.arch is "mlp"',
        ),
    ],
    ids=["arch", "arch-cnn", "encoder_config-arch"],
)
def test_simba_beside_a_named_arch_is_refused_in_a_file_and_in_python(network, named):
    from agilerl.trainer import LocalTrainer, TrainerError

    network = {**network, "head_config": {"hidden_size": [64]}}
    document = {"algorithm": {"name": "DQN"}, "environment": {"name": "CartPole-v1"}}
    with pytest.raises(SpecError) as info:
        parse_manifest({**document, "network": network})
    (issue,) = info.value.issues
    assert issue.path == ("network", "simba")
    assert f"network.simba must not be true when {named}: {NAMED_ARCH_MESSAGE}" in issue.message
    with pytest.raises(TrainerError, match=NAMED_ARCH_MESSAGE):
        LocalTrainer("DQN", "CartPole-v1", network=network)
    # arch: simba, or simba where the arch is inferred, is what simba is for
    simba_encoder = {"hidden_size": 64, "num_blocks": 2}
    for fine in (
        {"arch": "simba", "simba": True, "encoder_config": simba_encoder},
        {"simba": True},
    ):
        fine = {**fine, "head_config": {"hidden_size": [64]}}
        assert parse_manifest({**document, "network": fine}).network.simba is True
