"""``agilerl schema`` (agilerl/cli/schema.py): a schema as one self-contained document,
printed or written, that a standard validator uses without the other files."""

from __future__ import annotations

import json

import jsonschema

from agilerl.cli import main


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_manifest_schema_is_printed_with_every_reference_inside_it(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    refs = list(_refs(schema))
    assert refs and all(ref.startswith("#") for ref in refs)


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
