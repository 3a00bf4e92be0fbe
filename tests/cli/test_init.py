"""What ``agilerl init`` / ``validate`` / ``train`` tell a user before a run goes wrong:
algorithms the engine cannot train yet, environments that need an extra, and starter
manifests that keep one truth and their own output directory."""

import importlib.util
import json

import gymnasium as gym
import pytest
from support import ROOT

from agilerl.cli import main
from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.envs import make_env, missing_extra
from agilerl.models.base import engine_lacks
from agilerl.models.env import GymEnvSpec
from agilerl.models.manifest import load_manifest
from agilerl.models.registry import ALGO_REGISTRY


def test_engine_lacks_follows_the_engines_own_table():
    import agilerl.algorithms

    for name in ALGO_REGISTRY.names():
        lacking = engine_lacks(name)
        assert (lacking is None) == (name in agilerl.algorithms.NAMES)
        if lacking is not None:
            assert lacking.startswith(f"algorithm {name}: the engine cannot train it yet")
            with pytest.raises(Exception, match="does not implement it yet"):
                ALGO_REGISTRY.get(name).spec_cls.algo_class()  # the same answer


def test_init_warns_of_an_algorithm_the_engine_cannot_train(tmp_path, capsys, monkeypatch):
    import agilerl.algorithms

    # An engine without CQN (this one trains every algorithm it has a spec of).
    monkeypatch.setattr(agilerl.algorithms, "NAMES", tuple(set(agilerl.algorithms.NAMES) - {"CQN"}))
    assert main(["init", "CQN", "-o", str(tmp_path / "cqn.yaml")]) == 0
    err = capsys.readouterr().err
    assert "agilerl: warning: algorithm CQN: the engine cannot train it yet" in err
    assert main(["init", "DQN", "-o", str(tmp_path / "dqn.yaml")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_validate_warns_in_text_and_json(tmp_path, capsys, monkeypatch):
    import agilerl.algorithms

    # An engine without NeuralUCB (this one trains every algorithm it has a spec of).
    names = tuple(set(agilerl.algorithms.NAMES) - {"NeuralUCB"})
    monkeypatch.setattr(agilerl.algorithms, "NAMES", names)
    path = tmp_path / "neural_ucb.yaml"
    assert main(["init", "NeuralUCB", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["validate", str(path)]) == 0  # valid: a warning, not an error
    captured = capsys.readouterr()
    assert f"{path}: valid" in captured.out
    assert f"{path}: warning: algorithm NeuralUCB: the engine cannot train it yet" in captured.err
    assert main(["validate", "--format", "json", str(path)]) == 0
    entry = json.loads(capsys.readouterr().out)[str(path)]
    assert entry["valid"] and entry["warnings"][0].startswith("algorithm NeuralUCB:")
    assert main(["validate", "--format", "json", str(ROOT / "configs/ppo.yaml")]) == 0
    assert "warnings" not in json.loads(capsys.readouterr().out)[str(ROOT / "configs/ppo.yaml")]


def test_validate_stays_light_with_the_warning(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "cqn.yaml"
    assert main(["init", "CQN", "-o", str(path)]) == 0
    code = (  # in an engine without CQN
        "import sys; import agilerl.algorithms as a; a.NAMES = tuple(set(a.NAMES) - {'CQN'}); "
        "from agilerl.cli import main; main(['validate', sys.argv[1]]); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    assert "engine cannot train it yet" in out.stderr
    assert out.stdout.splitlines()[-1] == "False"


def test_init_ppo_writes_num_envs_once_and_names_its_own_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "PPO"]) == 0
    path = tmp_path / "ppo-cartpole-v1.yaml"  # not ppo.yaml: runs/ppo/ is the example's
    assert "wrote ppo-cartpole-v1.yaml" in capsys.readouterr().out
    text = path.read_text()
    assert text.count("num_envs") == 1
    manifest = load_manifest(path)
    assert manifest.environment.num_envs == 8
    assert main(["init", "PPO", "--env", "LunarLander-v3"]) == 0
    assert (tmp_path / "ppo-lunarlander-v3.yaml").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--env", ""],
            "agilerl: --env: empty; name an environment (e.g. CartPole-v1), or leave --env "
            "out for one that suits the algorithm",
        ),
        (
            ["--env", " \t"],
            "agilerl: --env: empty; name an environment (e.g. CartPole-v1), or leave --env "
            "out for one that suits the algorithm",
        ),
        (
            ["--env", "A" * 5000],
            "agilerl: --env: 5,000 characters, more than the 200 an environment name may have "
            "(the starter file is named after it); name a registered environment, e.g. "
            "CartPole-v1",
        ),
        (
            ["-o", "m" * 300 + ".yaml"],
            f"agilerl: {'m' * 300}.yaml: cannot write (File name too long)",
        ),
    ],
    ids=["empty", "whitespace", "too-long", "output-name-too-long"],
)
def test_init_refuses_an_env_or_file_name_it_cannot_use_and_writes_nothing(
    tmp_path, capsys, monkeypatch, argv, message
):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "DQN", *argv]) != 0
    captured = capsys.readouterr()
    assert captured.err == message + "\n" and captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_init_takes_an_env_name_at_the_length_bound(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["init", "DQN", "--env", "A" * 200]) == 0
    assert load_manifest(tmp_path / f"dqn-{'a' * 200}.yaml").environment.name == "A" * 200


def test_a_missing_gymnasium_extra_is_named(monkeypatch):
    def make(name, **kwargs):  # what gymnasium raises without Box2D, garbled quotes and all
        raise gym.error.DependencyNotInstalled('Box2D is not installed, run `pip install "swig"`')

    monkeypatch.setattr(gym, "make", make)
    with pytest.raises(EnvironmentSpecError) as caught:
        make_env(GymEnvSpec(name="LunarLander-v3"))
    assert str(caught.value) == (
        "environment.name: 'LunarLander-v3' needs the box2d extra, which is not installed: "
        "pip install 'agilespec[box2d]'"
    )


@pytest.mark.parametrize(
    ("name", "extra", "module"),
    [("LunarLander-v3", "box2d", "Box2D"), ("HalfCheetah-v5", "mujoco", "mujoco"),
     ("ALE/Pong-v5", "atari", "ale_py"), ("CartPole-v1", None, None)],
)  # fmt: skip
def test_extras_are_mapped_from_where_an_environment_comes_from(name, extra, module):
    assert missing_extra(name) == extra
    installed = module is not None and importlib.util.find_spec(module) is not None
    assert missing_extra(name, installed_too=False) == (None if installed else extra)


@pytest.mark.skipif(importlib.util.find_spec("ale_py") is not None, reason="ale_py installed")
def test_an_atari_environment_without_ale_names_the_atari_extra(tmp_path, capsys):
    with pytest.raises(EnvironmentSpecError, match=r"pip install 'agilespec\[atari\]'"):
        make_env(GymEnvSpec(name="ALE/Pong-v5"))


@pytest.mark.skipif(importlib.util.find_spec("mujoco") is not None, reason="mujoco installed")
def test_init_warns_of_an_extra_the_environment_needs(tmp_path, capsys):
    assert main(["init", "PPO", "--env", "HalfCheetah-v5", "-o", str(tmp_path / "m.yaml")]) == 0
    err = capsys.readouterr().err
    assert "warning: HalfCheetah-v5 needs the mujoco extra to train: " in err
    assert "pip install 'agilespec[mujoco]'" in err


NUM_ENVS_RULE = "algorithm: algorithm.num_envs must equal environment.num_envs (8), got 1"


def test_validate_refuses_an_algorithm_num_envs_that_differs(tmp_path, capsys):
    path = tmp_path / "ppo.yaml"
    text = (ROOT / "configs/ppo.yaml").read_text()
    path.write_text(text.replace("  name: PPO\n", "  name: PPO\n  num_envs: 1\n"))
    assert main(["validate", str(path)]) == 1
    assert f"{path}:3:1: {NUM_ENVS_RULE}" in capsys.readouterr().err
    out = str(tmp_path / "run")
    config = str(ROOT / "configs/ppo.yaml")
    assert main(["train", config, "--set", "algorithm.num_envs=1", "--out", out]) == 1
    err = capsys.readouterr().err
    assert NUM_ENVS_RULE in err and "Traceback" not in err


def test_the_trainer_refuses_specs_whose_num_envs_differ():
    from agilerl.models import PPOSpec
    from agilerl.trainer import LocalTrainer, TrainerError

    env = GymEnvSpec(name="CartPole-v1")  # num_envs left to its default, 16
    with pytest.raises(
        TrainerError, match=r"algorithm.num_envs must equal environment.num_envs \(16\), got 1"
    ):
        LocalTrainer(PPOSpec(num_envs=1), env)
    assert LocalTrainer(PPOSpec(num_envs=16), env).algorithm.num_envs == 16
    assert LocalTrainer(PPOSpec(), env).algorithm.num_envs == 1  # unset: the env decides


def test_manifests_written_for_ppo_leave_num_envs_to_the_environment(tmp_path):
    from agilerl.models.manifest import dump_manifest, parse_manifest
    from agilerl.trainer import LocalTrainer

    manifest = load_manifest(ROOT / "configs/ppo.yaml")
    assert "num_envs" not in dump_manifest(manifest)["algorithm"]
    assert (
        "num_envs"
        not in dump_manifest(LocalTrainer.from_manifest(manifest).to_manifest())["algorithm"]
    )
    document = dump_manifest(manifest)
    document["algorithm"]["num_envs"] = 8  # written, and agreeing: kept on a round trip
    assert dump_manifest(parse_manifest(document))["algorithm"]["num_envs"] == 8


def test_cli_init_proposes_ranges_only_for_mutable_rates(tmp_path, capsys):
    # LLM-PPO's lr_critic is nullable (null: lr_actor), so no manifest may mutate it.
    out = tmp_path / "llmppo.yaml"
    assert main(["init", "LLMPPO", "-o", str(out)]) == 0
    selection = load_manifest(out).mutation.rl_hp_selection
    assert "lr_actor" in selection and "lr_critic" not in selection


def test_cli_init_writes_a_valid_manifest_with_modeline(tmp_path, capsys):
    out = tmp_path / "sub" / "run.yaml"
    assert main(["init", "PPO", "--env", "LunarLander-v3", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# yaml-language-server: $schema=")
    schema_path = (out.parent / text.splitlines()[0].split("$schema=")[1]).resolve()
    assert schema_path.name == "manifest.schema.json" and schema_path.exists()
    manifest = load_manifest(out)
    assert manifest.algorithm.name == "PPO" and manifest.environment.name == "LunarLander-v3"
    assert main(["init", "PPO", "-o", str(out)]) == 1  # never overwrites silently
    assert main(["init", "Nope", "-o", str(tmp_path / "x.yaml")]) == 2
