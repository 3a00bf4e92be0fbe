"""``agilerl schema`` (agilerl/cli/schema.py): a schema as one self-contained document,
printed or written, that a standard validator uses without the other files."""

from __future__ import annotations

import json

import jsonschema
from support import ROOT, TESTS

from agilerl.cli import main
from agilerl.files.schema import validator_for


def test_the_bundled_schema_judges_a_manifest_alone(capsys):
    assert main(["schema", "--spec", "DQNSpec"]) == 0
    schema = json.loads(capsys.readouterr().out)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({})  # every field has its default
    assert not validator.is_valid({"lr": "fast"})
    assert not validator.is_valid({"lr": -1.0})


def test_output_is_written_to_a_file_and_said_so(tmp_path, capsys):
    out = tmp_path / "manifest.schema.json"
    assert main(["schema", "-o", str(out)]) == 0
    assert capsys.readouterr().out == (
        f"wrote {out} (TrainingManifest, every referenced schema bundled)\n"
    )
    main(["schema"])
    assert json.loads(out.read_text()) == json.loads(capsys.readouterr().out)


def test_an_unwritable_output_is_one_line_and_exit_1(tmp_path, capsys):
    out = tmp_path / "missing-folder" / "file" / "schema.json"
    (tmp_path / "missing-folder").write_text("a file, not a folder")
    assert main(["schema", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("agilerl: ") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_schema_is_self_contained(tmp_path):
    out = tmp_path / "manifest.json"
    assert main(["schema", "-o", str(out)]) == 0
    bundled = json.loads(out.read_text())
    refs = [ref for ref in json.dumps(bundled).split('"$ref": "')[1:]]
    assert refs and all(ref.startswith("#") for ref in refs)
    from agilerl.files.documents import load_document
    from agilerl.files.schema import SpecValidator

    validator = SpecValidator(bundled)
    for path in sorted((ROOT / "configs").glob("*.yaml"))[:3] + [
        TESTS / "agilerl_manifests" / "tests" / "dqn.yaml"
    ]:
        data, _ = load_document(path)
        assert validator.is_valid(data) == validator_for("TrainingManifest").is_valid(data)
