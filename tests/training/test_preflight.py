"""Everything that validates trains, or is refused before training starts (issue 9, §3).

Three layers: limits that are properties of a field live in the schema (every validator
refuses them: pydantic and jsonschema here, ajv through the manifest corpus of
tests/schemas/test_manifest_cross_language.py); a mutation range is narrowed to its
hyperparameter's limits by the engine; and what depends on the machine (memory, paths)
is the pre-flight's, run by ``LocalTrainer.train`` before anything is built or written.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema
from support import ROOT

from agilerl.algorithms import DQN, PPO
from agilerl.algorithms.hyperparameters import RLParameter
from agilerl.cli import main
from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.preflight import estimate
from agilerl.files.schema import inline_schema, schema_documents, validator_for
from agilerl.models.base import AlgorithmNotAvailableError
from agilerl.models.limits import Limits, hyperparameter_limits
from agilerl.models.manifest import load_manifest, parse_manifest
from agilerl.models.registry import ALGO_REGISTRY
from agilerl.models.standard_rules import is_rule_statement
from agilerl.models.validation import SpecError
from agilerl.trainer import LocalTrainer, TrainerError
from agilerl.training.preflight import PreflightError
from codegen.lint import lint

GiB = 2**30


def manifest(**sections: dict[str, Any]) -> dict[str, Any]:
    """A small valid DQN manifest with ``sections`` merged in."""
    doc: dict[str, Any] = {
        "algorithm": {"name": "DQN"},
        "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
        "training": {"max_steps": 1000},
    }
    for key, value in sections.items():
        doc[key] = value if value is None else {**doc.get(key, {}), **value}
    return doc


# --- limits in the schema: every validator refuses these --------------------------------

REFUSED = {
    "range past gamma's limits": (
        manifest(mutation={"rl_hp_selection": {"gamma": {"min": 0.9, "max": 5.0}}}),
        "mutation.rl_hp_selection.gamma.max",
        "DQN.gamma must be >= 0 and <= 1",
    ),
    "range below gamma's limits": (
        manifest(mutation={"rl_hp_selection": {"gamma": {"min": -0.5, "max": 0.9}}}),
        "mutation.rl_hp_selection.gamma.min",
        "DQN.gamma must be >= 0",
    ),
    "integer range reaching batch_size 0": (
        manifest(mutation={"rl_hp_selection": {"batch_size": {"min": 0, "max": 64}}}),
        "mutation.rl_hp_selection.batch_size.min",
        "DQN.batch_size must be >= 1",
    ),
    "fractional bound of an integer": (
        manifest(mutation={"rl_hp_selection": {"learn_step": {"min": 1, "max": 7.5}}}),
        "mutation.rl_hp_selection.learn_step.max",
        "must be an integer",
    ),
    "name that is no hyperparameter": (
        manifest(mutation={"rl_hp_selection": {"ent_coef": {"min": 0.0, "max": 0.1}}}),
        "mutation.rl_hp_selection.ent_coef",
        "DQN has no numeric hyperparameter 'ent_coef'",
    ),
    "misspelt name": (
        manifest(mutation={"rl_hp_selection": {"gama": {"min": 0.9, "max": 0.99}}}),
        "mutation.rl_hp_selection.gama",
        "did you mean 'gamma'?",
    ),
    "boolean hyperparameter": (
        manifest(mutation={"rl_hp_selection": {"double": {"min": 0, "max": 1}}}),
        "mutation.rl_hp_selection.double",
        "no numeric hyperparameter 'double'",
    ),
    "PPO range past clip_coef's limits": (
        {
            **manifest(mutation={"rl_hp_selection": {"clip_coef": {"min": 0.1, "max": 2}}}),
            "algorithm": {"name": "PPO"},
        },
        "mutation.rl_hp_selection.clip_coef.max",
        "PPO.clip_coef must be >= 0 and <= 1",
    ),
    "all mutation weights 0": (
        manifest(
            mutation={
                "probabilities": {"no_mut": 0, "arch_mut": 0, "params_mut": 0, "rl_hp_mut": 0}
            }
        ),
        "mutation.probabilities.no_mut",
        "at least one of no_mut, arch_mut, params_mut, act_mut, rl_hp_mut must be above 0",
    ),
    "seed past 2**64": (
        manifest(training={"seed": 18446744073709551617}),
        "training.seed",
        "less than or equal to 4294967295",
    ),
    "seed of 2**32": (
        manifest(training={"seed": 2**32}),
        "training.seed",
        "less than or equal to 4294967295",
    ),
    "mutation seed past 2**32 - 1": (
        manifest(mutation={"rand_seed": 2**40}),
        "mutation.rand_seed",
        "less than or equal to 4294967295",
    ),
    "replay buffer of 1e12": (
        manifest(replay_buffer={"max_size": 1e12}),
        "replay_buffer.max_size",
        "less than or equal to 1000000000",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_the_schema_refuses(case: str) -> None:
    doc, where, message = REFUSED[case]
    with pytest.raises(SpecError) as info:
        parse_manifest(copy.deepcopy(doc))
    issues = {".".join(map(str, issue.path)): issue.message for issue in info.value.issues}
    assert where in issues, issues
    assert message in issues[where], issues
    assert not validator_for("TrainingManifest").is_valid(doc)


ACCEPTED = {
    "ranges at the limits": manifest(
        mutation={
            "rl_hp_selection": {
                "gamma": {"min": 0.9, "max": 1.0},
                "batch_size": {"min": 1, "max": 256},
                "learn_step": {"min": 1.0, "max": 8},  # 1.0 is an integer in JSON Schema
                "tau": {"min": 0, "max": 1},
                "lr": {"min": 1e-5, "max": 1e-2},
            }
        }
    ),
    "one mutation weight above 0": manifest(
        mutation={"probabilities": {"no_mut": 0, "arch_mut": 0, "params_mut": 0, "act_mut": 0.1}}
    ),
    "weights 0 but the defaults": manifest(mutation={"probabilities": {"no_mut": 0}}),
    "largest seed": manifest(training={"seed": 2**32 - 1}, mutation={"rand_seed": 2**32 - 1}),
    "largest replay buffer": manifest(replay_buffer={"max_size": 1_000_000_000}),
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_the_schema_accepts(case: str) -> None:
    doc = ACCEPTED[case]
    parse_manifest(copy.deepcopy(doc))
    assert validator_for("TrainingManifest").is_valid(doc)


def _clause_names(name: str) -> set[str]:
    """Names the manifest schema's rl_hp_selection clause for ``name`` allows."""
    for clause in schema_documents()["manifest.schema.json"]["allOf"]:
        then = clause["then"]["properties"]
        if "mutation" in then and clause["if"]["properties"]["algorithm"]["properties"]["name"][
            "enum"
        ] == [name]:
            selection = then["mutation"]["anyOf"][0]["properties"]["rl_hp_selection"]
            return set(selection["properties"])
    raise AssertionError(f"no rl_hp_selection clause for {name}")


@pytest.mark.parametrize("name", ALGO_REGISTRY.names())
def test_python_limits_are_the_schema_limits(name: str) -> None:
    """The pydantic mirror reads the limits from the generated classes; they must be the
    schema's, and its names the schema clause's."""
    spec_cls = ALGO_REGISTRY.get(name).spec_cls
    limits = hyperparameter_limits(spec_cls)
    assert set(limits) == _clause_names(name)
    properties = inline_schema(spec_cls.__name__)["properties"]
    for field, found in limits.items():
        prop = properties[field]
        assert found.integer == (prop["type"] == "integer"), field
        low = prop.get("minimum", prop.get("exclusiveMinimum", -np.inf))
        high = prop.get("maximum", prop.get("exclusiveMaximum", np.inf))
        assert (found.low >= low, found.high <= high) == (True, True), field
        assert ("exclusiveMinimum" in prop) == (found.low > low), field


def test_lint_finds_a_stale_rl_hp_selection_clause(tmp_path: Path) -> None:
    folder = tmp_path / "schemas"
    shutil.copytree(ROOT / "schemas", folder)
    path = folder / "manifest.schema.json"
    doc = json.loads(path.read_text())
    for clause in filter(lambda entry: not is_rule_statement(entry), doc["allOf"]):
        if clause["if"]["properties"]["algorithm"]["properties"]["name"].get("enum") == ["DQN"]:
            ranges = clause["then"]["properties"].get("mutation")
            if ranges:
                del ranges["anyOf"][0]["properties"]["rl_hp_selection"]["properties"]["tau"]
    path.write_text(json.dumps(doc))
    problems = lint(folder)
    assert any("clause for DQN" in p and "missing ['tau']" in p for p in problems), problems


# --- the engine: a mutation never leaves the range nor the limits ------------------------


@pytest.mark.parametrize("algo_cls", [DQN, PPO])
def test_every_schema_hyperparameter_can_mutate(algo_cls: type) -> None:
    """What the schema lets a manifest name, the engine accepts (no refusal at build)."""
    limits = hyperparameter_limits(ALGO_REGISTRY.get(algo_cls.__name__).spec_cls)
    env = gym.make("CartPole-v1")
    hp_config = {}
    for name, limit in limits.items():
        low = 1 if limit.integer else max(limit.low, 0.0)
        hp_config[name] = {"min": low, "max": min(limit.high, low + 4)}
    agent = algo_cls(env.observation_space, env.action_space, hp_config=hp_config)
    rng = np.random.default_rng(0)
    for _ in range(60):
        name, _, new = agent.mutate_hyperparameter(rng)
        assert limits[name].problem(new) is None, (name, new)


def test_a_mutation_is_clipped_to_the_range_and_the_limits() -> None:
    env = gym.make("CartPole-v1")
    agent = DQN(
        env.observation_space,
        env.action_space,
        batch_size=2,
        hp_config={"batch_size": {"min": 0, "max": 3}, "gamma": {"min": 0.9, "max": 5.0}},
    )
    assert agent.hp_config["batch_size"] == RLParameter(1, 3)
    assert agent.hp_config["gamma"] == RLParameter(0.9, 1.0)
    rng = np.random.default_rng(1)
    seen = {"batch_size": set(), "gamma": set()}
    for _ in range(400):
        name, _, new = agent.mutate_hyperparameter(rng)
        if name in seen:
            seen[name].add(new)
    assert min(seen["batch_size"]) == 1 and max(seen["batch_size"]) <= 3
    assert max(seen["gamma"]) == 1.0 and min(seen["gamma"]) >= 0.9


def test_limits_with_exclusive_bounds() -> None:
    limits = RLParameter(-5, 5).within(Limits(low=np.nextafter(0, 1), high=1.0))
    assert 0 < limits.min and limits.max == 1.0
    assert RLParameter(0.2, 7.9).within(Limits(integer=True)) == RLParameter(1, 7)


def test_a_range_outside_the_limits_is_refused_before_training() -> None:
    """``algorithm.hp_config`` is free-form in the seeds, so the engine is the guard."""
    spec = ALGO_REGISTRY.get("DQN").spec_cls(hp_config={"gamma": {"min": 2.0, "max": 5.0}})
    trainer = LocalTrainer(spec, {"name": "CartPole-v1", "num_envs": 1, "sync": True})
    with pytest.raises(TrainerError, match=r"mutation.rl_hp_selection: hp_config.gamma: range"):
        trainer.preflight(available=GiB)


# --- the pre-flight: memory ------------------------------------------------------------


def trainer_for(doc: dict[str, Any]) -> LocalTrainer:
    return LocalTrainer.from_manifest(parse_manifest(doc))


MEMORY = {
    "a hundred thousand agents": (manifest(training={"pop_size": 100_000}), "training.pop_size"),
    "a hundred thousand worker processes": (
        manifest(environment={"num_envs": 100_000, "sync": False, "vectorize": "async"}),
        "environment.num_envs",
    ),
    "a billion transitions": (
        manifest(replay_buffer={"max_size": 1_000_000_000}),
        "replay_buffer.max_size",
    ),
    "a network of 2.5 billion parameters (measured on the meta device, not allocated)": (
        {
            **manifest(),
            "network": {
                "encoder_config": {"hidden_size": [50_000, 50_000], "max_mlp_nodes": 100_000},
                "head_config": {"hidden_size": [64]},
            },
        },
        "network",
    ),
    "tournaments of 10**15 entrants": (
        {
            **manifest(),
            "mutation": {},
            "selection_strategy": {"tournament_size": 10**15},
        },
        "selection_strategy.tournament_size",
    ),
    "PPO rollouts of a billion steps": (
        {**manifest(training={"pop_size": 4}), "algorithm": {"name": "PPO", "learn_step": 10**9}},
        "algorithm.learn_step",
    ),
}


@pytest.mark.parametrize("case", MEMORY)
def test_a_run_too_large_for_memory_is_refused(case: str) -> None:
    doc, field = MEMORY[case]
    with pytest.raises(PreflightError) as info:
        trainer_for(doc).preflight(available=8 * GiB)
    message = str(info.value)
    assert message.startswith(f"{field}: "), message
    assert "this machine has 8.0 GiB available" in message, message


def test_the_memory_error_gives_the_estimate() -> None:
    doc = manifest(replay_buffer={"max_size": 1_000_000_000})
    with pytest.raises(PreflightError) as info:
        trainer_for(doc).preflight(available=GiB)
    # CartPole: two observations of 4 float32, an int64 action, a float64 reward, a flag.
    assert "1,000,000,000 transitions of 49 B need 45.6 GiB" in str(info.value)


def test_a_small_run_fits_and_its_estimate_adds_up() -> None:
    found = trainer_for(manifest()).preflight(available=GiB)
    fields = [need.field for need in found.needs]
    assert fields == [
        "training.pop_size",
        "environment.num_envs",
        "replay_buffer.max_size",
        "algorithm.batch_size",
    ]
    assert found.total == sum(need.bytes for need in found.needs) < 64 * 2**20


def test_the_estimate_scales_with_the_population() -> None:
    one = estimate(trainer_for(manifest(training={"pop_size": 1})).context).needs[0].bytes
    many = estimate(trainer_for(manifest(training={"pop_size": 1000})).context).needs[0].bytes
    assert many == 1000 * one


def test_a_batch_larger_than_the_replay_buffer_is_refused() -> None:
    # Valid (within the manifest's bound of 10**9), but larger than this run's buffer.
    doc = manifest(algorithm={"batch_size": 5000}, replay_buffer={"max_size": 1000})
    parse_manifest(doc)
    with pytest.raises(
        PreflightError,
        match=r"^algorithm.batch_size: 5,000 is more than replay_buffer.max_size \(1,000\)",
    ):
        trainer_for(doc).preflight(available=GiB)


# --- the pre-flight: paths --------------------------------------------------------------


def _unwritable_directory(tmp_path: Path) -> Path:
    """A directory no file can be created in (root ignores permission bits: use /proc)."""
    if os.geteuid() == 0:
        return Path("/proc")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


def test_an_output_directory_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "taken"
    file.write_text("x")
    for out in (file, file / "below"):
        with pytest.raises(PreflightError, match=r"^output directory: .* (is|not) a directory"):
            trainer_for(manifest()).preflight(output_dir=out, available=GiB)


def test_an_unwritable_output_directory_is_refused(tmp_path: Path) -> None:
    folder = _unwritable_directory(tmp_path)
    with pytest.raises(PreflightError, match=r"^output directory: cannot write in "):
        trainer_for(manifest()).preflight(output_dir=folder / "run", available=GiB)


@pytest.mark.parametrize(
    "path, message",
    [
        ("/", r"^training.checkpoint_path: / is a directory; name a file in one"),
        ("..", r"^training.checkpoint_path: \.\. is a directory"),
        ("bad\x00name.pt", r"^training.checkpoint_path: .* holds a NUL character"),
        ("x" * 300 + ".pt", r"^training.checkpoint_path: .*(too long|not a usable path)"),
    ],
)
def test_an_unusable_checkpoint_path_is_refused(path: str, message: str) -> None:
    doc = manifest(training={"checkpoint_path": path})
    with pytest.raises(PreflightError, match=message):
        trainer_for(doc).preflight(available=GiB)


def test_a_checkpoint_in_an_unwritable_directory_is_refused(tmp_path: Path) -> None:
    path = _unwritable_directory(tmp_path) / "checkpoint.pt"
    doc = manifest(training={"checkpoint_path": str(path)})
    with pytest.raises(PreflightError, match=r"^training.checkpoint_path: cannot write"):
        trainer_for(doc).preflight(available=GiB)


def test_the_path_checks_leave_nothing_behind(tmp_path: Path) -> None:
    out = tmp_path / "new" / "run"
    doc = manifest(training={"checkpoint_path": str(tmp_path / "checkpoint.pt")})
    trainer_for(doc).preflight(output_dir=out, available=GiB)
    assert list(tmp_path.iterdir()) == []


# --- the pre-flight runs before the first step ------------------------------------------


def test_train_refuses_before_building_anything(tmp_path: Path) -> None:
    out = tmp_path / "run"
    trainer = trainer_for(manifest(training={"pop_size": 1_000_000_000}))
    with pytest.raises(
        PreflightError, match=r"^training.pop_size: 1,000,000,000 makes the updates"
    ):
        trainer.train(verbose=False, output_dir=out)
    assert trainer.population is None and not out.exists()


@pytest.mark.parametrize(
    "problem", ["out is a file", "checkpoint is /", "pop_size 1e9", "no training section"]
)
def test_agilerl_train_reports_a_refusal_in_one_line(tmp_path: Path, capsys, problem) -> None:
    doc = manifest()
    out = tmp_path / "run"
    if problem == "out is a file":
        out.write_text("not a directory")
    elif problem == "checkpoint is /":
        doc["training"]["checkpoint_path"] = "/"
    elif problem == "pop_size 1e9":
        doc["training"]["pop_size"] = 1_000_000_000
    else:  # training takes every default; the environment is too large
        del doc["training"]
        # a worker process each (native copies of CartPole would fit)
        doc["environment"] = {"name": "CartPole-v1", "num_envs": 100_000, "vectorize": "async"}
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(doc))  # JSON is YAML
    assert main(["train", str(path), "--out", str(out), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("agilerl: ") and len(err.strip().splitlines()) <= 3, err


# --- every valid manifest we have: accepted, or refused with a clear error ---------------

#: The errors a refused run may end with: each names the field at fault.
CLEAR = (PreflightError, TrainerError, EnvironmentSpecError, AlgorithmNotAvailableError)


def _corpus() -> list[Any]:
    docs = []
    for root in ("tests/agilerl_manifests", "tests/manifest_corpus/valid", "configs"):
        for path in sorted((ROOT / root).rglob("*.yaml")):
            docs.append(pytest.param(path, id=str(path.relative_to(ROOT))))
    for entry in json.loads((ROOT / "tests/corpus/valid.json").read_text()):
        if entry["spec"] == "TrainingManifest":
            docs.append(pytest.param(entry["document"], id=f"tests/corpus/{entry['id']}"))
    return docs


def _outcome(doc: Any, out: Path) -> str:
    """Run the pre-flight on a document; ``accepted``, ``refused``, or ``invalid``."""
    try:
        manifest = load_manifest(doc) if isinstance(doc, Path) else parse_manifest(doc)
    except SpecError:
        return "invalid"
    try:
        trainer = LocalTrainer.from_manifest(manifest)
        trainer.preflight(output_dir=out)
    except CLEAR as err:
        assert str(err).strip(), f"{type(err).__name__} without a message"
        return "refused"
    return "accepted"


@pytest.mark.parametrize("doc", _corpus())
def test_every_corpus_manifest_is_accepted_or_refused_clearly(doc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # relative checkpoint paths are probed here
    if isinstance(doc, Path):
        shutil.copy(doc, tmp_path / doc.name)  # entry points resolve beside the manifest
        doc = tmp_path / doc.name
    assert _outcome(doc, tmp_path / "out") in ("accepted", "refused", "invalid")
    assert not (tmp_path / "out").exists()


def test_the_corpus_has_manifests_the_preflight_accepts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcomes = [
        _outcome(ROOT / "configs" / name, tmp_path / "o") for name in ("dqn.yaml", "ppo.yaml")
    ]
    assert outcomes == ["accepted", "accepted"]


# --- generated manifests ----------------------------------------------------------------


def _schema_documents(title: str) -> st.SearchStrategy:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_schema(inline_schema(title))


#: Relative paths only: the pre-flight creates and removes a probe where a path points.
PATHS = st.one_of(
    st.none(),
    st.sampled_from([".", "..", "a/../b.pt", "deep/er/c.pt", "d/"]),
    st.from_regex(r"[A-Za-z0-9_.\-]{1,30}(/[A-Za-z0-9_.\-]{1,30}){0,2}", fullmatch=True),
)


@st.composite
def generated_manifests(draw: Any) -> dict[str, Any]:
    name = draw(st.sampled_from(["DQN", "PPO"]))
    algorithm = {"name": name, **draw(_schema_documents(f"{name}Spec"))}
    training = draw(_schema_documents("TrainingSpec"))
    training["checkpoint_path"] = draw(PATHS)
    mutation = draw(st.one_of(st.none(), _schema_documents("MutationSpec")))
    if mutation is not None and draw(st.booleans()):
        mutation.pop("rl_hp_selection", None)  # random names rarely belong to the algorithm
    doc = {
        "algorithm": algorithm,
        "environment": {
            "name": "CartPole-v1",
            "num_envs": draw(st.integers(1, 200_000)),
            "sync": draw(st.booleans()),
        },
        "training": training,
        "mutation": mutation,
        "replay_buffer": draw(st.one_of(st.none(), _schema_documents("ReplayBufferSpec"))),
    }
    return doc


@pytest.mark.slow
def test_generated_manifests_are_accepted_or_refused_clearly(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outcomes = {"accepted": 0, "refused": 0, "invalid": 0}

    @settings(
        max_examples=60,
        deadline=None,
        database=None,
        derandomize=True,  # the same manifests on every run: CI must not depend on a draw
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(generated_manifests())
    def check(doc: dict[str, Any]) -> None:
        outcomes[_outcome(doc, tmp_path / "out")] += 1
        assert sorted(p.name for p in tmp_path.iterdir()) == [], "the pre-flight left files"

    check()
    assert outcomes["accepted"] > 0 and outcomes["refused"] > 0, outcomes


def test_prioritised_and_n_step_buffers_are_counted() -> None:
    doc = manifest(
        algorithm={"name": "RainbowDQN"},
        replay_buffer={"max_size": 1000, "per_buffer": True, "n_step_buffer": True},
    )
    needs = {need.field: need.bytes for need in estimate(trainer_for(doc).context).needs}
    assert needs["replay_buffer.per_buffer"] == 1000 * 25
    # the n-step buffer holds the replay buffer's rows plus a float32 discount each
    assert needs["replay_buffer.n_step_buffer"] == needs["replay_buffer.max_size"] + 1000 * 4


# --- the pre-flight allocates nothing (issue 24) ----------------------------------------

#: Networks far larger than any machine: the pre-flight must size them on the meta device.
HUGE_NETWORKS = {
    "an MLP of two layers of 100,000": (
        "DQN",
        {"hidden_size": [100_000, 100_000], "max_mlp_nodes": 100_000},
        "network: one agent alone needs 186.3 GiB",
    ),
    "an LSTM of hidden size 1,000,000": (
        "PPO",
        {"arch": "lstm", "hidden_state_size": 10**6, "max_hidden_state_size": 10**6},
        "network: one agent alone needs 101.9 TiB",
    ),
}

#: Runs `agilerl train` with its address space capped (RLIMIT_AS): an allocation of the
#: network's size fails there with a MemoryError / RuntimeError traceback.
UNDER_A_CAP = """
import resource, sys
cap = 4 * 2**30
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
from agilerl.cli import main
sys.exit(main(["train", sys.argv[1], "--out", sys.argv[2], "--quiet"]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("case", HUGE_NETWORKS)
def test_a_huge_network_is_refused_without_being_allocated(case: str, tmp_path: Path) -> None:
    """Building the agent on the meta device allocated the weights first (``nn.Linear``
    calls ``torch.empty`` before its parameter moves): 40 GB really allocated, then a
    traceback. Under a 4 GiB address-space cap the refusal must be one line."""
    import subprocess
    import sys

    name, encoder, refusal = HUGE_NETWORKS[case]
    doc = manifest(algorithm={"name": name}, environment={"num_envs": 1})
    doc["network"] = {"encoder_config": encoder, "head_config": {"hidden_size": [64]}}
    path = tmp_path / "huge.yaml"
    path.write_text(json.dumps(doc))
    done = subprocess.run(
        [sys.executable, "-c", UNDER_A_CAP, str(path), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"agilerl: {refusal} "), done.stderr


def test_a_huge_network_is_sized_on_the_meta_device_in_process() -> None:
    from agilerl.training.preflight import meta_agent

    doc = manifest()
    doc["network"] = {
        "encoder_config": {"hidden_size": [100_000, 100_000], "max_mlp_nodes": 100_000},
        "head_config": {"hidden_size": [64]},
    }
    trainer = trainer_for(doc)
    env = SimpleNamespace(
        single_observation_space=gym.spaces.Box(-1, 1, (4,)),
        single_action_space=gym.spaces.Discrete(2),
        num_envs=1,
    )
    agent = meta_agent(trainer.context, env)
    assert {p.device.type for p in agent.network_parameters()} == {"meta"}
    with pytest.raises(PreflightError, match=r"^network: one agent alone needs 186.3 GiB"):
        trainer.preflight(available=8 * GiB)


# --- the per-agent estimate is calibrated (issue 24) -------------------------------------


def test_the_per_agent_estimate_counts_each_networks_overhead() -> None:
    """Tensors alone counted 181 KiB of a default CartPole DQN, where building agents
    measured 367 KiB each (benchmarks/preflight_calibration.py): each network adds
    NETWORK_OVERHEAD_BYTES."""
    from agilerl.training.preflight import NETWORK_OVERHEAD_BYTES, agent_bytes, tensor_bytes

    found = estimate(trainer_for(manifest()).context).needs[0]
    assert found.one == 479_912 and found.one / 1024 > 367  # at least what was measured
    assert NETWORK_OVERHEAD_BYTES == 144 * 2**10
    ctx = trainer_for(manifest()).context
    from agilerl.training.preflight import meta_agent

    env = SimpleNamespace(
        single_observation_space=gym.spaces.Box(-1, 1, (4,)),
        single_action_space=gym.spaces.Discrete(2),
        num_envs=2,
    )
    agent = meta_agent(ctx, env)
    assert agent_bytes(agent) == tensor_bytes(agent) + 2 * NETWORK_OVERHEAD_BYTES


def test_a_population_of_200000_is_refused() -> None:
    """It passed at 49 KiB an agent; calibrated, 200,000 agents need 179 GiB (one at a
    time: cohorts add their environment copies and rows, counted in their own line)."""
    training = {"pop_size": 200_000, "cohorts": False}
    with pytest.raises(PreflightError) as info:
        trainer_for(manifest(training=training)).preflight(available=100 * GiB)
    assert str(info.value) == (
        "training.pop_size: 200,000 agents of 468.7 KiB (networks, gradients, optimiser "
        "state; 2 generations alive during selection) need 178.8 GiB; the run needs about "
        "178.8 GiB in all and this machine has 100.0 GiB available"
    )


def test_noisy_layers_count_their_noise_buffers() -> None:
    from agilerl.training.preflight import meta_agent, tensor_bytes

    env = SimpleNamespace(
        single_observation_space=gym.spaces.Box(-1, 1, (4,)),
        single_action_space=gym.spaces.Discrete(2),
        num_envs=2,
    )
    agent = meta_agent(trainer_for(manifest(algorithm={"name": "RainbowDQN"})).context, env)
    buffers = sum(b.numel() * b.element_size() for b in agent.actor.buffers())
    params = sum(p.numel() * p.element_size() for p in agent.network_parameters())
    assert buffers > 0
    assert tensor_bytes(agent) >= params + 2 * buffers  # actor and its target


# --- every count that multiplies work is bounded (issue 24) ------------------------------

WORK = {
    "update_epochs 1e9": (
        {**manifest(), "algorithm": {"name": "PPO", "update_epochs": 10**9}},
        "algorithm.update_epochs: 1,000,000,000 makes the updates 1,000,000,000,000 steps "
        "(training.pop_size 1 x training.max_steps 1,000 x algorithm.update_epochs "
        "1,000,000,000); the run asks for 1,000,000,002,000 steps of work in all, more than "
        "the 10,000,000,000 a run may (AGILERL_MAX_WORK raises it)",
    ),
    "eval_loop 1e9": (
        manifest(training={"eval_loop": 10**9}),
        "training.eval_loop: 1,000,000,000 makes the evaluations 1,000,000,000,000 steps "
        "(training.pop_size 1 x generations 1 x training.eval_loop 1,000,000,000 x "
        "environment.num_envs 2 x training.eval_steps (unset: CartPole-v1's time limit) "
        "500); the run asks for 1,000,000,026,600 steps of work in all, more than the "
        "10,000,000,000 a run may (AGILERL_MAX_WORK raises it)",
    ),
    "batches of a million every step": (
        manifest(
            algorithm={"batch_size": 10**6, "learn_step": 1},
            training={"max_steps": 10**6},
            replay_buffer={"max_size": 10**7},
        ),
        "algorithm.batch_size: 1,000,000 makes the updates 1,000,000,000,000 steps "
        "(training.pop_size 1 x learning steps 1,000,000 x algorithm.batch_size 1,000,000); "
        "the run asks for 1,000,001,100,000 steps of work in all, more than the "
        "10,000,000,000 a run may (AGILERL_MAX_WORK raises it)",
    ),
}


@pytest.mark.parametrize("case", WORK)
def test_a_count_that_multiplies_work_is_bounded(case: str) -> None:
    doc, refusal = WORK[case]
    with pytest.raises(PreflightError) as info:
        trainer_for(doc).preflight(available=GiB)
    assert str(info.value) == refusal


def test_the_work_ceiling_can_be_raised_and_a_bad_one_is_refused(monkeypatch) -> None:
    doc = manifest(training={"eval_loop": 10**9})
    monkeypatch.setenv("AGILERL_MAX_WORK", str(10**13))
    assert trainer_for(doc).preflight(available=GiB) is not None
    monkeypatch.setenv("AGILERL_MAX_WORK", "lots")
    with pytest.raises(PreflightError, match=r"^AGILERL_MAX_WORK='lots': expected a positive"):
        trainer_for(doc).preflight(available=GiB)


# --- the thread count is at most the cores (issue 24) ------------------------------------


@pytest.fixture
def two_cores(monkeypatch):
    from agilerl.training import threads

    monkeypatch.setattr(threads, "cores", lambda: 2)
    monkeypatch.delenv(threads.ENV_VAR, raising=False)


def test_more_threads_than_cores_are_refused_before_anything_is_built(two_cores) -> None:
    """--threads 100000 crashed libgomp; 5000 made a 20 s run take minutes."""
    trainer = LocalTrainer.from_manifest(parse_manifest(manifest()), num_threads=100_000)
    with pytest.raises(PreflightError) as info:
        trainer.preflight(available=GiB)
    assert str(info.value) == (
        "num_threads: 100,000 threads is more than the 2 CPU cores this process may run on "
        "(its affinity); give at most 2"
    )
    assert trainer.population is None


def test_agilerl_num_threads_above_the_cores_is_refused(two_cores, monkeypatch) -> None:
    monkeypatch.setenv("AGILERL_NUM_THREADS", "5000")
    with pytest.raises(PreflightError, match=r"^AGILERL_NUM_THREADS: 5,000 threads is more "):
        trainer_for(manifest()).preflight(available=GiB)


def test_agilerl_train_threads_above_the_cores_is_one_line(two_cores, tmp_path, capsys) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(manifest()))
    out = tmp_path / "run"
    assert main(["train", str(path), "--out", str(out), "--quiet", "--threads", "5000"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        "agilerl: num_threads: 5,000 threads is more than the 2 CPU cores this process may "
        "run on (its affinity); give at most 2"
    ), err
    assert not out.exists()


def test_threads_up_to_the_cores_are_accepted(two_cores) -> None:
    trainer = LocalTrainer.from_manifest(parse_manifest(manifest()), num_threads=2)
    assert trainer.preflight(available=GiB) is not None


def test_a_familys_unused_fields_count_as_set_only_off_their_defaults():
    """``refuse_unused`` refuses what a run sets, not what every run has: a field at its
    default (``warmup_actions: policy``, ``learning_delay: 0``) passes, another value
    is named with the family's reason."""
    from agilerl.models.training import TrainingSpec
    from agilerl.training.preflight import refuse_unused

    unused = {"training.warmup_actions": "why not", "training.learning_delay": "why not"}
    at_defaults = SimpleNamespace(training=TrainingSpec(warmup_actions="policy"))
    assert refuse_unused(at_defaults, unused) == []
    both = SimpleNamespace(training=TrainingSpec(warmup_actions="uniform", learning_delay=5))
    assert sorted(refuse_unused(both, unused)) == [
        "training.learning_delay: why not; remove it",
        "training.warmup_actions: why not; remove it",
    ]
