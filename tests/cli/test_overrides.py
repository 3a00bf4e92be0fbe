"""``--set KEY=VALUE`` (agilerl/cli/overrides.py): dotted keys and YAML values applied to
a manifest before it is validated like the file itself, each problem naming the
``--set`` it came from or the file's line, and AgileRL's old spelling of a key replaced
by a ``--set`` of its new one."""

from __future__ import annotations

import pytest

from agilerl.cli.common import CliError
from agilerl.cli.overrides import load_with_overrides

MANIFEST = """\
version: 1
algorithm: {name: DQN, lr: 0.001}
environment: {name: CartPole-v1, num_envs: 2}
training:
  max_steps: 5000
  evo_steps: 1000
"""


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "dqn.yaml"
    path.write_text(MANIFEST)
    return str(path)


def _refused(path, *assignments):
    with pytest.raises(CliError) as err:
        load_with_overrides(path, list(assignments))
    return str(err.value)


def test_values_are_read_as_yaml_at_their_dotted_keys(manifest):
    loaded = load_with_overrides(
        manifest, ["training.max_steps=20000", "algorithm.lr=3e-4", "algorithm.double=true"]
    )
    assert loaded.training.max_steps == 20000
    assert loaded.algorithm.lr == 3e-4 and loaded.algorithm.double is True


def test_a_set_brings_the_sections_the_file_lacks(manifest):
    loaded = load_with_overrides(manifest, ["replay_buffer.max_size=777"])
    assert loaded.replay_buffer.max_size == 777


def test_list_items_are_set_by_their_index(tmp_path):
    path = tmp_path / "net.yaml"
    path.write_text(
        MANIFEST + "network:\n  encoder_config: {hidden_size: [64, 64]}\n"
        "  head_config: {hidden_size: [64]}\n"
    )
    loaded = load_with_overrides(str(path), ["network.encoder_config.hidden_size.1=8"])
    assert loaded.network.encoder_config["hidden_size"] == [64, 8]  # kept as written


def test_the_file_is_left_as_it_was(manifest):
    load_with_overrides(manifest, ["training.max_steps=20000"])
    assert open(manifest).read() == MANIFEST


@pytest.mark.parametrize("item", ["training", "=3", " =3"])
def test_an_assignment_without_a_key_and_value_is_refused_with_an_example(manifest, item):
    assert _refused(manifest, item) == (
        f"--set {item}: expected KEY=VALUE, e.g. training.max_steps=20000"
    )


def test_a_key_below_a_value_is_refused_naming_the_value(manifest):
    assert _refused(manifest, "training.max_steps.x=1") == (
        "--set training.max_steps.x=1: training.max_steps is not a section of the manifest"
    )


def test_a_bad_value_is_blamed_on_its_set_and_a_broken_rule_on_the_files_line(manifest):
    message = _refused(manifest, "training.max_steps=500", "algorithm.lr=fast")
    lines = message.splitlines()
    assert lines[0] == f"2 problem(s) with the manifest {manifest}:"
    assert any(
        line.startswith("  --set algorithm.lr=fast: algorithm.lr: Input should be a valid number")
        for line in lines
    )
    # evo_steps, written in the file (line 6), is now above the max_steps the --set gave
    assert any(
        line.startswith(f"  {manifest}:6:3: training.evo_steps: evo_steps must be <= max_steps")
        for line in lines
    )


def test_a_set_of_a_new_key_replaces_the_files_old_spelling(tmp_path, capsys):
    path = tmp_path / "old.yaml"
    path.write_text(MANIFEST.replace("max_steps: 5000", "max_steps: 5000\n  population_size: 6"))
    assert load_with_overrides(str(path), []).training.pop_size == 6
    capsys.readouterr()
    assert load_with_overrides(str(path), ["training.pop_size=3"]).training.pop_size == 3
    assert "population_size" not in capsys.readouterr().err


def test_a_file_that_is_not_a_document_is_one_located_error(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("training: [1, 2\n")
    assert _refused(str(path)).startswith(str(path))
