"""generated/ is exactly what schemas/ generate, and the schema lint catches what it claims."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

from codegen.lint import lint

SCHEMAS = ROOT / "schemas"


def test_generated_code_matches_schemas():
    codegen = Path(sys.executable).with_name("datamodel-codegen")
    result = subprocess.run([str(codegen), "--check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_files_carry_the_do_not_edit_header():
    for path in (ROOT / "generated").glob("*.py"):
        assert path.read_text().startswith("# @generated from schemas/"), path.name


def test_schemas_pass_the_lint():
    assert lint(SCHEMAS) == []


def _lint_with(tmp_path: Path, file: str, change) -> list[str]:
    folder = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, folder)
    doc = json.loads((folder / file).read_text())
    change(doc)
    (folder / file).write_text(json.dumps(doc))
    return lint(folder)


def _set(path: list, value):
    def change(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return change


@pytest.mark.parametrize(
    ("file", "change", "expected"),
    [
        ("mlp.schema.json", _set(["additionalProperties"], True), "not closed"),
        (
            "mlp.schema.json",
            _set(["properties", "min_mlp_nodes", "default"], 0),
            "violates its schema",
        ),
        ("cnn.schema.json", _set(["title"], "MlpSpec"), "title 'MlpSpec' also used"),
        ("mlp.schema.json", _set(["properties", "arch", "type"], 5), "not a valid 2020-12 schema"),
        ("mlp.schema.json", _set(["$id"], "https://example.com/x.json"), "$id must be"),
        (
            "mlp.schema.json",
            _set(["properties", "activation", "$ref"], "nowhere.json"),
            "does not resolve",
        ),
        (
            "network.schema.json",
            _set(["$defs", "EncoderConfig", "required"], []),
            "must require its tag",
        ),
        (
            "mlp.schema.json",
            _set(["required"], ["hidden_sizes"]),
            "'hidden_sizes' is not a declared",
        ),
        (
            "network.schema.json",
            _set(["$defs", "EncoderConfig", "required"], ["arch", "x"]),
            "'x' is not a",
        ),
        ("lstm.schema.json", _set(["properties", "arch"], {"type": "string"}), "as a const"),
        ("mlp.schema.json", _set(["x-agilerl-rules", 0, "atMost"], "max_nodes"), "not a property"),
        ("mlp.schema.json", _set(["x-agilerl-rules", 0, "atMost"], 5), "malformed"),
        # a rule JSON Schema can state belongs in standard keywords, not the vocabulary
        (
            "mlp.schema.json",
            _set(["x-agilerl-rules", 0], {"field": "activation", "requiredIf": "layer_norm"}),
            "is one JSON Schema can state: write it in standard keywords, as the allOf entry "
            '{"if": {"properties": {"layer_norm": {"const": true}}}, "then": {"properties": '
            '{"activation": {"not": {"type": "null"}}}}}',
        ),
        # an allOf entry that is not exactly the standard form of a rule
        (
            "offline_env.schema.json",
            _set(["allOf", 1, "then", "properties"], {"minari_dataset_id": {"type": "string"}}),
            "offline_env.schema.json/allOf/1: allOf entry",
        ),
        (
            "llm_env.schema.json",
            _set(
                ["allOf", 1, "then"],
                {"properties": {"datasett": {"not": {"type": "null"}}}, "required": ["datasett"]},
            ),
            "names 'datasett', not a property",
        ),
        (
            "q_network.schema.json",
            _set(["unevaluatedProperties"], True),
            "fragment must be used only",
        ),
    ],
)
def test_lint_catches(tmp_path, file, change, expected):
    problems = _lint_with(tmp_path, file, change)
    assert any(expected in problem for problem in problems), problems


def test_every_package_is_listed_for_installation():
    """pyproject.toml lists packages by name (two live outside agilerl/); a package
    missing from the list would vanish from a non-editable install."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "agilerl").rglob("__init__.py")
        if "schemas" not in init.parts
    }
    assert on_disk | {"agilerl._generated", "agilerl.schemas"} == listed
