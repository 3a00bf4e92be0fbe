"""No code from an agent file: what a file records is built only when it names no code
outside :data:`agilerl.guards.recorded_code.TRUSTED_MODULES`, or when the user names the code
again (--env, --manifest) or passes --trust-agent-code. Every hostile file here is an
agent file edited and re-signed (its checksum recomputed), as anyone can."""

from __future__ import annotations

import importlib
import sys

import gymnasium as gym
import pytest
import torch

from agilerl.algorithms import PPO, RLAlgorithm
from agilerl.cli import main
from agilerl.files import checkpoints
from agilerl.guards.recorded_code import TRUSTED_MODULES, installed_imports, untrusted_code
from agilerl.models.env import GymEnvSpec, PzEnvSpec

NET = {"encoder_config": {"hidden_size": [8]}, "head_config": {"hidden_size": [8]}}


def _agent_file(path, environment):
    env = gym.make("CartPole-v1")
    torch.manual_seed(0)
    agent = PPO(env.observation_space, env.action_space, net_config=NET, seed=0)
    env.close()
    agent.environment = {"name": "CartPole-v1"}
    agent.save_checkpoint(path)
    # The attacker's edit: a new recorded environment, the file re-signed.
    tree = checkpoints.load(path)
    tree["environment"] = environment
    checkpoints.save(tree, path)
    return path


def _marker_env(folder, marker):
    """A file that writes ``marker`` when imported and makes CartPole."""
    (folder / "envs.py").write_text(
        "import gymnasium as gym\n"
        f"open({str(marker)!r}, 'w').close()\n"
        "def make():\n    return gym.make('CartPole-v1')\n"
        "class Wrap(gym.Wrapper):\n    pass\n"
    )


def _refusal(capsys, *args):
    assert main(["evaluate", *args]) == 1
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("agilerl:")]
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_an_os_system_entry_point_is_refused_and_never_called(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    path = _agent_file(
        tmp_path / "a.pt",
        {"name": "x", "entrypoint": "os:system", "config": {"command": f"touch {marker}"}},
    )
    line = _refusal(capsys, str(path), "--episodes", "1")
    assert line == (
        f"agilerl: {path} names code to import: environment.entrypoint -> os:system "
        "(module os). Code an agent file names is never imported on its word (its checksum "
        "is no signature): name the environment yourself with --env ID or --manifest FILE, "
        "or pass --trust-agent-code if you trust whoever wrote the file"
    )
    assert not marker.exists()


def test_a_recorded_path_and_file_wrapper_are_refused_unless_trusted(tmp_path, capsys):
    marker = tmp_path / "imported"
    _marker_env(tmp_path, marker)
    recorded = {"name": "CartPole-v1", "path": str(tmp_path), "wrappers": ["envs.py:Wrap"]}
    path = _agent_file(tmp_path / "a.pt", recorded)
    line = _refusal(capsys, str(path), "--episodes", "1")
    assert (
        f"names code to import: environment.path -> {tmp_path} (a folder modules are "
        "imported from first); environment.wrappers.0 -> envs.py:Wrap (file envs.py)." in line
    )
    assert not marker.exists()
    # The user's word: the same file runs with the trust flag.
    assert main(["evaluate", str(path), "--episodes", "1", "--trust-agent-code"]) == 0
    assert marker.exists()


def test_naming_the_code_again_in_a_manifest_builds_it(tmp_path, capsys):
    marker = tmp_path / "imported"
    _marker_env(tmp_path, marker)
    recorded = {"name": "x", "entrypoint": "envs.py:make", "path": str(tmp_path)}
    path = _agent_file(tmp_path / "a.pt", recorded)
    assert "environment.entrypoint -> envs.py:make (file envs.py)" in _refusal(capsys, str(path))
    assert not marker.exists()
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        "version: 1\nalgorithm: {name: PPO}\n"
        f"environment: {{name: x, entrypoint: 'envs.py:make', path: '{tmp_path}'}}\n"
    )
    assert main(["evaluate", str(path), "--manifest", str(manifest), "--episodes", "1"]) == 0
    assert marker.exists()


def test_a_gymnasium_module_name_is_refused(tmp_path, capsys):
    path = _agent_file(tmp_path / "a.pt", {"name": "evilpkg:Evil-v0"})
    assert "environment.name -> evilpkg:Evil-v0 (module evilpkg)" in _refusal(capsys, str(path))
    # --env names the environment instead: the recorded one is not looked at.
    assert main(["evaluate", str(path), "--env", "CartPole-v1", "--episodes", "1"]) == 0


def test_loading_an_agent_builds_no_environment(tmp_path):
    marker = tmp_path / "ran"
    recorded = {"name": "x", "entrypoint": "os:system", "config": {"command": f"touch {marker}"}}
    path = _agent_file(tmp_path / "a.pt", recorded)
    agent = RLAlgorithm.load(path)
    assert agent.environment == recorded  # kept as data
    assert agent.clone().environment == recorded
    assert not marker.exists()


def test_dataset_collect_acts_in_the_environment_named_on_the_command_line(tmp_path, capsys):
    marker = tmp_path / "ran"
    recorded = {"name": "x", "entrypoint": "os:system", "config": {"command": f"touch {marker}"}}
    policy = _agent_file(tmp_path / "a.pt", recorded)
    out = tmp_path / "d.h5"
    args = ["dataset", "collect", "CartPole-v1", "-o", str(out), "--steps", "5"]
    assert main([*args, "--policy", str(policy)]) == 0
    assert out.is_file() and not marker.exists()


@pytest.mark.parametrize(
    ("spec", "refused"),
    [
        (GymEnvSpec(name="CartPole-v1"), []),  # a registered id is data
        (GymEnvSpec(name="CartPole-v1", wrappers=["gymnasium.wrappers.ClipAction"]), []),
        (
            GymEnvSpec(name="CartPole-v1", wrappers=["gymnasium.wrappers_evil.X"]),
            ["environment.wrappers.0 -> gymnasium.wrappers_evil.X (module gymnasium.wrappers_evil)"],
        ),
        (GymEnvSpec(name="cue", entrypoint="agilerl.testing.cooperative:cue_game"), []),
        (
            GymEnvSpec(name="x", entrypoint="agilerl.cli:main"),
            ["environment.entrypoint -> agilerl.cli:main (module agilerl.cli)"],
        ),
        (PzEnvSpec(name="mpe2.simple_speaker_listener_v4"), []),
        (PzEnvSpec(name="pettingzoo.butterfly.pistonball_v6"), []),
        (
            PzEnvSpec(name="mymodule"),
            ["environment.name -> mymodule:parallel_env (module mymodule)"],
        ),
        (
            PzEnvSpec(name="pettingzoo.x", path="/tmp/elsewhere"),
            ["environment.path -> /tmp/elsewhere (a folder modules are imported from first)"],
        ),
    ],
)  # fmt: skip
def test_the_trusted_table_decides(spec, refused):
    assert untrusted_code(spec) == refused


# -- a trusted name resolves to the installed distribution, never to a file beside the agent


def _marker_module(folder, name, marker, body=""):
    """``folder/name.py``: writes ``marker`` when imported (and holds ``body``)."""
    (folder / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n{body}")
    return folder / f"{name}.py"


@pytest.mark.parametrize(
    ("recorded", "field"),
    [
        ({"name": "x", "entrypoint": "mpe2:make"}, "environment.entrypoint -> mpe2:make"),
        ({"name": "CartPole-v1", "wrappers": ["mpe2:W"]}, "environment.wrappers.0 -> mpe2:W"),
        ({"name": "mpe2:Evil-v0"}, "environment.name -> mpe2:Evil-v0"),
    ],
    ids=["entrypoint", "wrapper", "gymnasium-module"],
)
def test_a_trusted_name_shadowed_in_the_working_directory_is_refused_unimported(
    tmp_path, capsys, monkeypatch, recorded, field
):
    # The archive "a.pt + mpe2.py", unpacked and evaluated in place.
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    shadow = _marker_module(tmp_path, "mpe2", marker, "def make():\n    pass\nW = make\n")
    path = _agent_file(tmp_path / "a.pt", recorded)
    line = _refusal(capsys, "a.pt", "--episodes", "1")
    assert (
        f"agilerl: a.pt names code to import: {field} (module mpe2; {shadow} would be "
        "imported instead of the installed mpe2: move or rename it)." in line
    )
    assert not marker.exists()
    # Moved away, the same file is the installed module's business again: not refused.
    shadow.unlink()
    assert untrusted_code(GymEnvSpec(name="x", entrypoint="mpe2:make"), (tmp_path,)) == []
    assert path.is_file()  # nothing lost


def test_a_trusted_package_shadowed_beside_the_agent_is_refused(tmp_path, capsys, monkeypatch):
    # A pettingzoo/ package in the agent's folder, evaluated from elsewhere.
    folder = tmp_path / "unpacked"
    (folder / "pettingzoo").mkdir(parents=True)
    marker = tmp_path / "ran"
    _marker_module(folder / "pettingzoo", "__init__", marker)
    _marker_module(folder / "pettingzoo", "x", marker, "def make():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    agent = _agent_file(folder / "a.pt", {"name": "x", "entrypoint": "pettingzoo.x:make"})
    line = _refusal(capsys, str(agent), "--episodes", "1")
    assert (
        f"environment.entrypoint -> pettingzoo.x:make (module pettingzoo.x; "
        f"{folder / 'pettingzoo' / '__init__.py'} would be imported instead of the installed "
        "pettingzoo: move or rename it)" in line
    )
    assert not marker.exists()


def test_a_namespace_folder_of_a_trusted_name_does_not_shadow_it(tmp_path):
    # A bare folder (no __init__.py) never wins over an installed regular package.
    (tmp_path / "mpe2").mkdir()
    assert untrusted_code(PzEnvSpec(name="mpe2.simple_speaker_listener_v4"), (tmp_path,)) == []


def test_a_trusted_name_must_resolve_inside_the_installed_packages(tmp_path, monkeypatch):
    # An mpe2 put on sys.path from a folder that is neither site-packages nor this package
    # (a PYTHONPATH entry the agent's archive told the user to set) is not the installed one.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mpe2.py").write_text("")
    monkeypatch.delitem(sys.modules, "mpe2", raising=False)
    monkeypatch.syspath_prepend(str(elsewhere))
    found = untrusted_code(GymEnvSpec(name="x", entrypoint="mpe2:make"), (tmp_path,))
    assert found == [
        f"environment.entrypoint -> mpe2:make (module mpe2; mpe2 is {elsewhere / 'mpe2.py'}, "
        "outside the installed packages)"
    ]


def test_a_trusted_name_that_is_not_installed_is_refused(monkeypatch):
    monkeypatch.setitem(TRUSTED_MODULES, "notinstalled_agilerl_pkg", "a test's entry")
    found = untrusted_code(GymEnvSpec(name="x", entrypoint="notinstalled_agilerl_pkg:make"))
    assert found == [
        "environment.entrypoint -> notinstalled_agilerl_pkg:make (module "
        "notinstalled_agilerl_pkg; notinstalled_agilerl_pkg is not installed)"
    ]


def test_a_recorded_section_is_built_with_the_working_directory_off_the_import_path(
    tmp_path, monkeypatch
):
    # What trusted code imports in turn is not looked up beside the agent either: a module
    # only the working directory holds cannot be imported while the section is built.
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "ran"
    _marker_module(tmp_path, "agilerl_transitive_shadow", marker)
    monkeypatch.syspath_prepend("")  # `python -m agilerl` puts the working directory first
    before = list(sys.path)
    with installed_imports((tmp_path,)), pytest.raises(ModuleNotFoundError):
        importlib.import_module("agilerl_transitive_shadow")
    assert not marker.exists()
    assert sys.path == before  # restored


def test_a_recorded_installed_entry_point_evaluates_from_a_folder_of_modules(
    tmp_path, capsys, monkeypatch
):
    # A trusted wrapper evaluates in a folder holding unrelated modules: only a file posing
    # as the trusted name is refused.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helpers.py").write_text("")
    wrapper = {"wrapper": "gymnasium.wrappers.ClipReward", "kwargs": {"min_reward": -1}}
    recorded = {"name": "CartPole-v1", "wrappers": [wrapper]}
    path = _agent_file(tmp_path / "a.pt", recorded)
    assert main(["evaluate", str(path), "--episodes", "1"]) == 0
