"""Where a manifest's entry point and wrappers are looked up (agilerl.guards.manifest_code.anchored):
the manifest's folder, recorded absolute."""

from __future__ import annotations

import pytest

from agilerl.guards.manifest_code import anchored, code_references
from agilerl.models.env import BanditEnvSpec, GymEnvSpec, OfflineEnvSpec, PzEnvSpec
from agilerl.models.manifest import parse_manifest


def test_a_file_entry_point_is_looked_up_in_the_manifest_folder(tmp_path):
    spec = anchored(GymEnvSpec(name="c", entrypoint="corridor.py:make"), tmp_path / "a" / "..")
    assert spec.path == str(tmp_path.resolve())


@pytest.mark.parametrize("cls", [GymEnvSpec, OfflineEnvSpec, PzEnvSpec])
def test_every_section_with_an_entry_point_is_anchored(tmp_path, cls):
    extra = {"dataset_path": "d.h5"} if cls is OfflineEnvSpec else {}
    spec = cls(name="c", entrypoint="envs/grid.py:make", **extra)
    assert anchored(spec, tmp_path).path == str(tmp_path.resolve())


def test_a_file_wrapper_anchors_a_registered_id(tmp_path):
    spec = GymEnvSpec(name="CartPole-v1", wrappers=["wrap.py:Wrap"])
    assert anchored(spec, tmp_path).path == str(tmp_path.resolve())


def test_a_relative_path_starts_at_the_manifest_folder_and_an_absolute_one_stays(tmp_path):
    spec = GymEnvSpec(name="c", entrypoint="corridor.py:make", path="../envs")
    assert anchored(spec, tmp_path / "configs").path == str(tmp_path.resolve() / "envs")
    spec = GymEnvSpec(name="c", entrypoint="corridor.py:make", path=str(tmp_path))
    assert anchored(spec, "/somewhere/else").path == str(tmp_path)


def test_a_module_only_the_manifest_folder_holds_is_anchored(tmp_path):
    (tmp_path / "my_corridor_envs").mkdir()
    (tmp_path / "my_corridor_envs" / "__init__.py").write_text("")
    spec = GymEnvSpec(name="c", entrypoint="my_corridor_envs.grid:make")
    assert anchored(spec, tmp_path).path == str(tmp_path.resolve())


@pytest.mark.parametrize(
    "spec",
    [
        GymEnvSpec(name="CartPole-v1"),
        GymEnvSpec(name="cue", entrypoint="agilerl.testing.cooperative:cue_game"),
        GymEnvSpec(name="CartPole-v1", wrappers=["gymnasium.wrappers.RecordEpisodeStatistics"]),
        BanditEnvSpec(features="f.csv", targets="t.csv"),
    ],
)
def test_installed_code_and_sections_without_code_are_left_alone(tmp_path, spec):
    # a recorded path is a folder modules are imported from first, which evaluate asks
    # the user to trust: it is not added where nothing is looked up in the folder
    assert anchored(spec, tmp_path) is spec


def test_validate_lists_the_file_beside_the_manifest(tmp_path):
    manifest = parse_manifest(
        {
            "algorithm": {"name": "DQN"},
            "environment": {"name": "c", "entrypoint": "corridor.py:make"},
        }
    )
    (ref,) = code_references(manifest, base_dir=tmp_path / "custom")
    assert ref.file == (tmp_path / "custom" / "corridor.py").resolve()
