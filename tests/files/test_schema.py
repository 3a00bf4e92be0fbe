"""The schemas at run time (agilerl/files/schema.py): every packaged schema, found by
title or file name, validated with the project's rules keyword, inlined for tools that
cannot follow ``$ref``, with the same verdicts as the canonical files."""

from __future__ import annotations

import json

import pytest
from support import ROOT

from agilerl.files.schema import inline_schema, schema_documents, schema_titles, validator_for


def _messages(validator, document):
    return sorted(error.message for error in validator.iter_errors(document))


def test_every_schema_of_the_repository_is_packaged_with_its_id():
    documents = schema_documents()
    assert set(documents) == {path.name for path in (ROOT / "schemas").glob("*.schema.json")}
    assert all(doc["$id"].startswith("https://") for doc in documents.values())


def test_a_spec_is_found_by_its_title_or_its_file_name():
    assert schema_titles()["TrainingSpec"] == "training.schema.json"
    by_title, by_file = validator_for("TrainingSpec"), validator_for("training.schema.json")
    bad = {"max_steps": "many"}
    assert (
        _messages(by_title, bad) == _messages(by_file, bad) == ["'many' is not of type 'integer'"]
    )


def test_an_unknown_spec_is_refused_listing_the_known_ones():
    with pytest.raises(KeyError) as err:
        validator_for("TrainingSpecs")
    message = err.value.args[0]
    assert message.startswith("No schema for 'TrainingSpecs'. Known specs: ")
    assert "TrainingSpec," in message and "MlpSpec" in message


def test_the_validator_checks_rules_between_fields():
    """What JSON Schema cannot say (one value against another) is still checked."""
    validator = validator_for("TrainingSpec")
    assert _messages(validator, {"max_steps": 100, "evo_steps": 500}) == [
        "evo_steps must be <= max_steps (100), got 500"
    ]
    assert validator.is_valid({"max_steps": 1000, "evo_steps": 500})


def test_references_across_files_resolve_without_fetching():
    validator = validator_for("TrainingManifest")
    manifest = {"algorithm": {"name": "DQN"}, "environment": {"name": "CartPole-v1"}}
    assert validator.is_valid(manifest)
    assert not validator.is_valid({**manifest, "training": {"max_steps": 0}})


@pytest.mark.parametrize("spec", ["TrainingManifest", "DQNSpec", "PPOSpec", "MlpSpec"])
def test_an_inlined_schema_holds_no_reference(spec):
    assert '"$ref"' not in json.dumps(inline_schema(spec))


@pytest.mark.parametrize(
    ("spec", "document", "valid"),
    [
        ("DQNSpec", {}, True),
        ("DQNSpec", {"lr": -1.0}, False),
        ("DQNSpec", {"lr": 0.01, "unknown": 1}, False),
        ("PPOSpec", {"clip_coef": 0.2, "update_epochs": 0}, False),
        ("TrainingSpec", {"max_steps": 10, "pop_size": 2}, True),
        ("TrainingSpec", {"pop_size": "2"}, False),
    ],
)
def test_an_inlined_schema_gives_the_canonical_verdict(spec, document, valid):
    import jsonschema

    inlined = jsonschema.Draft202012Validator(inline_schema(spec))
    assert inlined.is_valid(document) == validator_for(spec).is_valid(document) == valid
