"""Training manifests: loading, errors, round trips, and the compatibility corpus of
AgileRL's own manifests (``tests/agilerl_manifests``). The commands that read and write
them: tests/cli/test_validate.py, test_schema.py, test_init.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import ROOT, TESTS
from support.corpus import REFUSED, RUN_REFUSED

from agilerl.cli import main
from agilerl.files.schema import schema_documents, validator_for
from agilerl.models import (
    ALGO_REGISTRY,
    TrainingManifest,
    dump_manifest,
    load_manifest,
    parse_manifest,
)
from agilerl.models.manifest_base import environment_spec_for
from agilerl.models.standard_rules import is_rule_statement
from agilerl.models.validation import SpecError

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))
CORPUS_DIR = TESTS / "agilerl_manifests"
CORPUS = sorted(CORPUS_DIR.rglob("*.yaml"))


def corpus_id(path: Path) -> str:
    return path.relative_to(CORPUS_DIR).as_posix()


VALID_CORPUS = [p for p in CORPUS if corpus_id(p) not in REFUSED]


def test_corpus_is_present_and_refusals_name_real_files():
    assert len(CORPUS) >= 50
    assert set(REFUSED) <= {corpus_id(p) for p in CORPUS}


@pytest.mark.parametrize("path", VALID_CORPUS, ids=corpus_id)
def test_corpus_manifest_validates(path):
    manifest = load_manifest(path)
    assert isinstance(manifest, TrainingManifest)


@pytest.mark.parametrize(
    "path", [CORPUS_DIR / name for name in sorted(REFUSED)], ids=sorted(REFUSED)
)
def test_corpus_manifest_refused_with_reason(path):
    with pytest.raises(SpecError) as info:
        load_manifest(path)
    assert REFUSED[corpus_id(path)] in str(info.value)
    assert f"{path}:" in str(info.value)  # every problem carries file:line:column


@pytest.mark.parametrize("name", sorted(RUN_REFUSED))
def test_corpus_manifest_validates_but_every_run_refuses_it_first(name, capsys, tmp_path):
    path = CORPUS_DIR / name
    assert isinstance(load_manifest(path), TrainingManifest)  # AgileRL's schema holds
    assert main(["validate", str(path)]) == 1  # but validate says no run can take it
    assert RUN_REFUSED[name] in capsys.readouterr().err
    assert main(["train", str(path), "--out", str(tmp_path / "run")]) != 0
    assert RUN_REFUSED[name] in capsys.readouterr().err
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_example_config_validates_and_carries_the_modeline(path):
    assert path.read_text().startswith(
        "# yaml-language-server: $schema=../schemas/manifest.schema.json\n"
    )
    load_manifest(path)


def test_one_example_config_per_algorithm():
    assert {load_manifest(path).algorithm.name for path in CONFIGS} == set(ALGO_REGISTRY.names())


# --- benchmark manifests (configs/benchmarks, and the benchmark scripts' own) ---------------

SCRIPT_MANIFESTS = sorted((ROOT / "benchmarks").glob("*.yaml"))


@pytest.mark.parametrize("path", SCRIPT_MANIFESTS, ids=lambda path: path.name)
def test_the_benchmark_scripts_manifests_validate(path):
    """The manifests benchmarks/ runs and the docs cite (AgileRL's verbatim copies included)."""
    assert load_manifest(path).algorithm.name


BENCHMARKS = sorted((ROOT / "configs" / "benchmarks").glob("*.yaml"))


def test_the_benchmark_manifests_cover_the_standard_tasks():
    """The tasks of issue 26 that the side-by-side harness runs, each once."""
    tasks = {
        (manifest.algorithm.name, manifest.environment.name)
        for manifest in map(load_manifest, BENCHMARKS)
    }
    assert tasks == {
        ("PPO", "LunarLander-v3"),
        ("PPO", "HalfCheetah-v5"), ("PPO", "Hopper-v5"),
        ("TD3", "HalfCheetah-v5"), ("TD3", "Hopper-v5"),
        ("DDPG", "HalfCheetah-v5"), ("DDPG", "Hopper-v5"),
        ("DQN", "ALE/Pong-v5"), ("PPO", "ALE/Breakout-v5"),
    }  # fmt: skip
    assert len(tasks) == len(BENCHMARKS)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_a_benchmark_manifest_validates_evolves_a_population_and_names_its_source(path, capsys):
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../../schemas/manifest.schema.json\n")
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    manifest = load_manifest(path)
    assert manifest.training.pop_size >= 2 and manifest.training.hpo
    assert manifest.mutation is not None and manifest.mutation.rl_hp_selection
    assert manifest.selection_strategy is not None
    header = text.split("\nversion:")[0]  # the comment above the first key
    assert "CleanRL" in header or "RL Zoo" in header, header


# --- round trip --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    CONFIGS + VALID_CORPUS,
    ids=lambda p: p.name if p.parent.name == "configs" else corpus_id(p),
)
def test_round_trip_gives_the_same_specs_and_a_schema_valid_dump(path):
    first = load_manifest(path)
    dumped = dump_manifest(first)
    assert validator_for("TrainingManifest").is_valid(dumped), list(
        validator_for("TrainingManifest").iter_errors(dumped)
    )[:1]
    second = parse_manifest(json.loads(json.dumps(dumped)))
    assert second == first
    assert dump_manifest(second) == dumped


def test_recurrent_ppo_round_trips():
    manifest = load_manifest(CORPUS_DIR / "tests" / "ppo_lstm.yaml")
    assert manifest.algorithm.recurrent
    again = parse_manifest(dump_manifest(manifest))
    assert again.algorithm == manifest.algorithm and again.algorithm.name == "PPO"


# --- errors --------------------------------------------------------------------------------------

GOOD = {
    "algorithm": {"name": "DQN"},
    "environment": {"name": "CartPole-v1"},
    "network": {
        "arch": "mlp",
        "encoder_config": {"hidden_size": [64]},
        "head_config": {"hidden_size": [64]},
    },
}


def problems(doc) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_manifest(doc)
    return {issue.dotted_path: issue.message for issue in info.value.issues}


def test_typo_gets_the_closest_key():
    found = problems({**GOOD, "algorithm": {"name": "DQN", "learnstep": 5}})
    assert found == {"algorithm.learnstep": "unknown key (did you mean 'learn_step'?)"}


_MERGED = "unknown key (did you mean {!r}? it is required and missing)"


@pytest.mark.parametrize(
    ("section", "path", "meant"),
    [
        # the encoder chosen by its own arch, by network.arch, and the head
        ({"network": {**GOOD["network"], "arch": None, "encoder_config": {"arch": "mlp", "hiden_size": [64]}}},
         "network.encoder_config.hiden_size", "hidden_size"),
        ({"network": {**GOOD["network"], "encoder_config": {"hiden_size": [64]}}},
         "network.encoder_config.hiden_size", "hidden_size"),
        ({"network": {**GOOD["network"], "head_config": {"hiden_size": [64]}}},
         "network.head_config.hiden_size", "hidden_size"),
        # inside a map of specs
        ({"mutation": {"rl_hp_selection": {"lr": {"mni": 0.0001, "max": 0.01}}}},
         "mutation.rl_hp_selection.lr.mni", "min"),
        ({"mutation": {"rl_hp_selection": {"lr": {"min": 0.0001, "mxa": 0.01}}}},
         "mutation.rl_hp_selection.lr.mxa", "max"),
        # inside a list of specs, and a dependent section
        ({"environment": {"name": "CartPole-v1", "wrappers": [{"wraper": "my.Wrapper"}]}},
         "environment.wrappers[0].wraper", "wrapper"),
        ({"environment": {"nam": "CartPole-v1"}}, "environment.nam", "name"),
    ],
)  # fmt: skip
def test_misspelt_required_key_is_one_issue_at_any_depth(section, path, meant):
    found = problems({**GOOD, **section})
    assert found[path] == _MERGED.format(meant)
    missing = path.rsplit(".", 1)[0] + "." + meant
    assert missing not in found  # not reported a second time as missing


def test_suggestion_at_depth_when_the_meant_key_is_present():
    network = {**GOOD["network"], "encoder_config": {"hidden_size": [64], "layer_nrom": True}}
    found = problems({**GOOD, "network": network})
    assert found == {
        "network.encoder_config.layer_nrom": "unknown key (did you mean 'layer_norm'?)"
    }
    selection = {"lr": {"min": 0.0001, "max": 0.01, "grow_fator": 1.5}}
    found = problems({**GOOD, "mutation": {"rl_hp_selection": selection}})
    assert found == {
        "mutation.rl_hp_selection.lr.grow_fator": "unknown key (did you mean 'grow_factor'?)"
    }


def test_unknown_algorithm_names_the_known_ones():
    found = problems({**GOOD, "algorithm": {"name": "DQM"}})
    assert "did you mean 'DQN'?" in found["algorithm.name"] and "PPO" in found["algorithm.name"]


def test_every_problem_at_once():
    doc = {
        "algorithm": {"name": "PPO", "clip_coef": 2.0, "batchsize": 8},
        "environment": {"name": "CartPole-v1", "num_envs": "8"},
        "network": {
            "arch": "cnn",
            "encoder_config": {"arch": "mlp", "hidden_size": [8]},
            "head_config": {"hidden_size": [8]},
        },
        "training": {"max_steps": 10, "evo_steps": 100},
        "extra": 1,
    }
    found = problems(doc)
    assert set(found) == {
        "algorithm.clip_coef",
        "algorithm.batchsize",
        "environment.num_envs",
        "network.encoder_config.arch",
        "training.evo_steps",
        "extra",
    }
    assert found["algorithm.batchsize"] == "unknown key (did you mean 'batch_size'?)"
    assert found["network.encoder_config.arch"] == "conflicts with network.arch 'cnn'"


def test_environment_must_fit_the_agent_type():
    found = problems(
        {**GOOD, "environment": {"name": "x", "features": "f.csv", "targets": "t.csv"}}
    )
    assert "environment.features" in found and "unknown key" in found["environment.features"]


def test_network_arch_at_top_inside_or_absent():
    inside = {
        "encoder_config": {"arch": "mlp", "hidden_size": [64]},
        "head_config": {"hidden_size": [64]},
    }
    absent = {"encoder_config": {"hidden_size": [64]}, "head_config": {"hidden_size": [64]}}
    chosen = [
        parse_manifest({**GOOD, "network": n}).network_arch
        for n in (GOOD["network"], inside, absent, None)
    ]
    assert chosen == [
        ("mlp", "network.arch"),
        ("mlp", "network.encoder_config.arch"),
        (None, "inferred"),
        (None, "inferred"),
    ]
    found = problems(
        {
            **GOOD,
            "network": {
                "encoder_config": {"hidden_size": "x"},
                "head_config": {"hidden_size": [64]},
            },
        }
    )
    assert (
        "network.encoder_config" in found
        and "complete config of some encoder" in found["network.encoder_config"]
    )


def test_squash_output_only_for_stochastic_actors():
    network = {**GOOD["network"], "squash_output": True}
    assert "network.squash_output" in problems({**GOOD, "network": network})
    parse_manifest({**GOOD, "algorithm": {"name": "PPO"}, "network": network})


def test_file_errors_carry_line_and_column(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("algorithm:\n  name: DQN\n  learnstep: 5\nenvironment:\n  name: CartPole-v1\n")
    with pytest.raises(SpecError) as info:
        load_manifest(path)
    (issue,) = info.value.issues
    assert issue.position == (3, 3)
    assert (
        f"{path}:3:3: algorithm.learnstep: unknown key (did you mean 'learn_step'?) (found 5)"
        in str(info.value)
    )


def test_environment_table_matches_the_manifest_schema():
    """The schema's if/then (environment by algorithm) and the Python table agree."""
    manifest = schema_documents()["manifest.schema.json"]
    by_name = {}
    # a rule stated in standard keywords (simba beside a recurrent PPO) chooses no section
    for rule in filter(lambda entry: not is_rule_statement(entry), manifest["allOf"]):
        names = rule["if"]["properties"]["algorithm"]["properties"]["name"]["enum"]
        ref = rule["then"]["properties"].get("environment", {}).get("$ref")
        if ref:
            by_name.update({name: ref for name in names})
    assert set(by_name) == set(ALGO_REGISTRY.names())
    for name, ref in by_name.items():
        assert (
            schema_documents()[ref]["title"]
            == environment_spec_for(ALGO_REGISTRY.get(name).spec_cls).__name__
        )


def test_malformed_yaml_is_a_clear_error_not_a_traceback(tmp_path):
    from agilerl.files.documents import DocumentError

    # (``0x_`` is the string "0x_" in the dialect: tests/files/test_documents.py.)
    for text in ("algorithm: [\n", "lr: .inf\n", "a: !!python/object x\n", "a: !!map:x {}\n"):
        path = tmp_path / "broken.yaml"
        path.write_text(text)
        with pytest.raises(DocumentError, match=f"^{path}"):
            load_manifest(path)
