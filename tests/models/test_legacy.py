"""AgileRL's old spellings of manifest keys (agilerl/models/legacy.py): read under their
new names with a located warning, refused by ``--strict``, an error where both spellings
disagree; the schemas declare exactly the table's keys; ajv says the same."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from support import ROOT

from agilerl.cli import main
from agilerl.files.documents import load_document
from agilerl.files.schema import validator_for
from agilerl.models import ReplayBufferSpec, TrainingManifest, TrainingSpec, dump_manifest
from agilerl.models.legacy import (
    LEGACY_KEYS,
    RENAMED_KEYWORD,
    LegacyKeyWarning,
    normalise_legacy_keys,
)
from agilerl.models.manifest import load_manifest, parse_manifest
from agilerl.models.validation import SpecError

#: The schema file of each section the table names.
SECTION_SCHEMAS = {(): "manifest", ("training",): "training", ("replay_buffer",): "replay_buffer"}
#: Keywords that describe a value without constraining it.
ANNOTATIONS = {"description", "markdownDescription", "deprecated", "deprecationMessage", "default"}

LEGACY = """\
algorithm:
  name: DQN
environment:
  name: CartPole-v1
training:
  max_steps: 400
  population_size: 2
  metrics_interval: 200
replay_buffer:
  memory_size: 1000
tournament_selection:
  tournament_size: 2
"""


def schema(section: tuple[str, ...]) -> dict:
    return json.loads((ROOT / "schemas" / f"{SECTION_SCHEMAS[section]}.schema.json").read_text())


def constraints(subschema: dict) -> dict:
    return {k: v for k, v in subschema.items() if k not in ANNOTATIONS}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    return path


def line_of(text: str, key: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith(key))


# --- the table and the schemas -------------------------------------------------------------


@pytest.mark.parametrize("key", LEGACY_KEYS, ids=lambda k: ".".join(k.old_path))
def test_the_schema_declares_each_old_key_deprecated_as_its_new_one(key):
    found = schema(key.section)
    assert found[RENAMED_KEYWORD][key.old] == key.new
    declared = found["patternProperties"][f"^{key.old}$"]
    assert declared["deprecated"] is True and f"old name of `{key.new}`" in declared["description"]
    # no deprecationMessage: yaml-language-server shows it as an error (tests/schemas/test_editor.py)
    assert "deprecationMessage" not in declared
    # the old key takes exactly the values the new one takes
    assert constraints(declared) == constraints(found["properties"][key.new])


def test_the_schemas_rename_exactly_the_tables_keys():
    declared = {
        (section, old, new)
        for section in SECTION_SCHEMAS
        for old, new in schema(section).get(RENAMED_KEYWORD, {}).items()
    }
    others = [p.name for p in (ROOT / "schemas").glob("*.json") if RENAMED_KEYWORD in p.read_text()]
    assert declared == {(k.section, k.old, k.new) for k in LEGACY_KEYS}
    assert sorted(others) == sorted(f"{name}.schema.json" for name in SECTION_SCHEMAS.values())


def test_old_keys_are_no_fields_of_the_specs():
    fields = {
        **TrainingManifest.model_fields,
        **TrainingSpec.model_fields,
        **ReplayBufferSpec.model_fields,
    }
    assert not {key.old for key in LEGACY_KEYS} & fields.keys()


# --- the loader --------------------------------------------------------------------------


def test_each_old_key_is_read_as_its_new_name_with_a_located_warning(tmp_path):
    path = write(tmp_path, LEGACY)
    with pytest.warns(LegacyKeyWarning) as caught:
        manifest = load_manifest(path)
    assert manifest.training.pop_size == 2 and manifest.training.evo_steps == 200
    assert manifest.replay_buffer.max_size == 1000
    assert manifest.selection_strategy.tournament_size == 2
    messages = sorted(str(w.message) for w in caught)
    expected = sorted(
        f"{path}:{line_of(LEGACY, key.old + ':')}:{1 + 2 * len(key.section)}: "
        f"{'.'.join(key.old_path)}: deprecated: AgileRL's old name of {key.new!r}, "
        f"read as {key.new!r}; write {key.new!r}"
        for key in LEGACY_KEYS
    )
    assert messages == expected


def test_the_dump_uses_the_new_names_only(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyKeyWarning)
        dumped = dump_manifest(load_manifest(write(tmp_path, LEGACY)))
    assert dumped["training"]["pop_size"] == 2 and dumped["replay_buffer"]["max_size"] == 1000
    assert "selection_strategy" in dumped
    text = json.dumps(dumped)
    assert not [key.old for key in LEGACY_KEYS if f'"{key.old}"' in text]


def test_both_spellings_with_one_value_are_read_once_with_a_warning(tmp_path):
    text = LEGACY.replace("  population_size: 2\n", "  population_size: 2\n  pop_size: 2.0\n")
    with pytest.warns(LegacyKeyWarning, match=r"population_size: .*given too, with the same"):
        manifest = load_manifest(write(tmp_path, text))
    assert manifest.training.pop_size == 2


def test_both_spellings_with_two_values_are_an_error_naming_both(tmp_path):
    text = LEGACY.replace("  population_size: 2\n", "  population_size: 2\n  pop_size: 4\n")
    path = write(tmp_path, text)
    with pytest.raises(SpecError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyKeyWarning)
        load_manifest(path)
    (issue,) = info.value.issues
    assert issue.dotted_path == "training.population_size"
    assert issue.position == (line_of(text, "population_size"), 3)
    assert "'pop_size' is given too, with another value: keep one" in issue.message
    assert f"{path}:{issue.position[0]}:3: training.population_size:" in str(info.value)


def test_strict_refuses_every_old_key_at_its_line(tmp_path):
    path = write(tmp_path, LEGACY)
    with pytest.raises(SpecError) as info:
        load_manifest(path, strict=True)
    assert sorted(i.dotted_path for i in info.value.issues) == sorted(
        ".".join(k.old_path) for k in LEGACY_KEYS
    )
    assert all(i.position and "strict" in i.message for i in info.value.issues)


def test_a_bad_value_under_an_old_key_is_reported_there(tmp_path):
    text = LEGACY.replace("memory_size: 1000", "memory_size: 0")
    with pytest.raises(SpecError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyKeyWarning)
        load_manifest(write(tmp_path, text))
    (issue,) = info.value.issues
    assert issue.dotted_path == "replay_buffer.memory_size"
    assert issue.position == (line_of(text, "memory_size"), 3)


def test_a_document_from_python_warns_without_a_file():
    data, _ = load_document(ROOT / "tests" / "manifest_corpus" / "valid" / "legacy_keys.yaml")
    with pytest.warns(LegacyKeyWarning, match=r"^replay_buffer\.memory_size: deprecated"):
        assert parse_manifest(data).replay_buffer.max_size == 10_000


def test_normalising_leaves_the_document_as_it_was():
    data = {"training": {"population_size": 3, "max_steps": 10}, "tournament_selection": {}}
    before = json.dumps(data)
    normalised = normalise_legacy_keys(data)
    assert json.dumps(data) == before
    assert normalised.data == {
        "training": {"pop_size": 3, "max_steps": 10},
        "selection_strategy": {},
    }
    assert [i.dotted_path for i in normalised.deprecated] == [
        "training.population_size",
        "tournament_selection",
    ]


def test_the_json_schema_refuses_two_different_values_as_the_loader_does():
    document = {"algorithm": {"name": "DQN"}, "environment": {"name": "CartPole-v1"}}
    validator = validator_for("TrainingManifest")
    assert validator.is_valid({**document, "training": {"pop_size": 2, "population_size": 2}})
    (error,) = validator.iter_errors(
        {**document, "training": {"pop_size": 2, "population_size": 3}}
    )
    leaves = [error, *error.context]  # the section is an anyOf: its object branch
    assert ["training", "population_size"] in [list(e.absolute_path) for e in leaves]


def test_the_specs_read_old_keys_too_as_every_json_schema_validator_does():
    with pytest.warns(LegacyKeyWarning, match=r"^population_size: deprecated"):
        spec = TrainingSpec.model_validate({"population_size": 3, "max_steps": 10})
    assert spec.pop_size == 3 and "population_size" not in spec.model_dump()
    with pytest.raises(ValueError, match="memory_size"), warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyKeyWarning)
        ReplayBufferSpec.model_validate({"memory_size": 10, "max_size": 20})


def test_a_rule_broken_through_an_old_key_is_reported_at_it_by_the_json_schema():
    (error,) = validator_for("TrainingSpec").iter_errors({"metrics_interval": 20, "max_steps": 10})
    assert list(error.absolute_path) == ["metrics_interval"]
    assert error.message == "evo_steps must be <= max_steps (10), got 20"


# --- the command line --------------------------------------------------------------------


def test_validate_warns_on_stderr_and_strict_refuses(tmp_path, capsys):
    path = write(tmp_path, LEGACY)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    line = line_of(LEGACY, "population_size")
    assert (
        f"agilerl: warning: {path}:{line}:3: training.population_size: deprecated: "
        "AgileRL's old name of 'pop_size'"
    ) in err
    assert err.count("agilerl: warning:") == len(LEGACY_KEYS)

    assert main(["validate", "--strict", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:{line}:3: training.population_size: deprecated" in err
    assert "4 problem(s)" in err

    assert main(["validate", "--format", "json", str(path)]) == 0
    (entry,) = json.loads(capsys.readouterr().out).values()
    assert entry["valid"] and {d["path"] for d in entry["deprecated"]} == {
        ".".join(k.old_path) for k in LEGACY_KEYS
    }


def test_a_set_of_the_new_name_replaces_the_old_spelling(tmp_path, capsys):
    from agilerl.cli.overrides import load_with_overrides

    manifest = load_with_overrides(str(write(tmp_path, LEGACY)), ["training.pop_size=3"])
    assert manifest.training.pop_size == 3  # no conflict with the file's population_size
    err = capsys.readouterr().err
    assert "population_size" not in err and "metrics_interval: deprecated" in err


@pytest.mark.slow  # a short DQN run (~15 s on 2 cores)
def test_train_warns_and_writes_the_new_names(tmp_path, capsys):
    path = write(tmp_path, LEGACY)
    out = tmp_path / "run"
    budget = ["--set", "training.max_steps=200", "--set", "training.evo_steps=100",
              "--set", "training.eval_steps=20", "--set", "environment.num_envs=1",
              "--set", "environment.sync=true",
              "--set", "training.seed=0", "--quiet"]  # fmt: skip
    assert main(["train", str(path), "--out", str(out), *budget]) == 0
    err = capsys.readouterr().err
    assert f"agilerl: warning: {path}:" in err and "replay_buffer.memory_size" in err
    written, _ = load_document(out / "manifest.yaml")
    assert written["replay_buffer"]["max_size"] == 1000 and "memory_size" not in written
    assert written["training"]["pop_size"] == 2 and "selection_strategy" in written
    assert "tournament_selection" not in written


# --- Node (ajv) ------------------------------------------------------------------------


@pytest.mark.node
def test_ajv_reports_the_same_deprecations(node_toolchain, tmp_path):
    path = write(tmp_path, LEGACY)
    result = node_toolchain.run(
        "validate.mjs",
        "--schemas",
        ROOT / "schemas",
        "--spec",
        "TrainingManifest",
        "--issues",
        path,
    )
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout).values()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LegacyKeyWarning)
        from agilerl.models.manifest import parse_manifest_with_deprecations

        data, locate = load_document(path)
        _, python = parse_manifest_with_deprecations(data, locate=locate)
    assert entry["valid"] is True
    assert [(d["path"], d["line"], d["column"], d["message"]) for d in entry["deprecated"]] == [
        (i.dotted_path, *i.position, i.message) for i in sorted(python, key=lambda i: i.position)
    ]
