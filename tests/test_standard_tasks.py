"""The side-by-side harness with Stable-Baselines3 (benchmarks/standard_tasks.py): every
task names a benchmark manifest, and the translation to SB3's hyperparameters keeps the
manifest's numbers (SB3 itself is never installed here: its side runs in its own venv)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def harness():
    spec = importlib.util.spec_from_file_location(
        "standard_tasks", ROOT / "benchmarks" / "standard_tasks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["standard_tasks"] = module
    spec.loader.exec_module(module)
    return module


def test_every_task_names_a_benchmark_manifest_and_a_translation(harness):
    for name, task in harness.TASKS.items():
        doc = harness._manifest(task)
        assert doc["algorithm"]["name"] in harness.SB3_TRANSLATIONS, name
        assert name.split("-")[0] == doc["algorithm"]["name"].lower(), name


def test_ppo_keeps_the_rollout_minibatches_network_and_normalisation(harness):
    doc = harness._manifest(harness.TASKS["ppo-halfcheetah"])
    args = harness.SB3_TRANSLATIONS["PPO"](doc)
    algo = doc["algorithm"]
    assert args["n_envs"] == doc["environment"]["num_envs"]
    assert args["kwargs"]["n_steps"] * args["n_envs"] == algo["learn_step"]
    assert args["kwargs"]["batch_size"] == algo["batch_size"]
    assert args["kwargs"]["n_epochs"] == algo["update_epochs"]
    assert args["kwargs"]["learning_rate"] == algo["lr"]
    # encoder [64] -> linear latent -> head [64] is SB3's 64-64
    assert args["policy_kwargs"] == {
        "net_arch": {"pi": [64, 64], "vf": [64, 64]},
        "activation": "tanh",
    }
    assert args["normalize"] == {"norm_obs": True, "norm_reward": True}


def test_td3_keeps_the_delay_noise_and_update_rate(harness):
    doc = harness._manifest(harness.TASKS["td3-hopper"])
    args = harness.SB3_TRANSLATIONS["TD3"](doc)
    assert args["kwargs"]["learning_starts"] == doc["training"]["learning_delay"]
    assert args["kwargs"]["policy_delay"] == doc["algorithm"]["policy_freq"]
    assert args["kwargs"]["train_freq"] == 1 and args["kwargs"]["gradient_steps"] == 1
    assert args["action_noise"] == doc["algorithm"]["expl_noise"]
    assert args["policy_kwargs"]["net_arch"] == [256, 256]
    assert "policy_delay" not in harness.SB3_TRANSLATIONS["DDPG"](doc)["kwargs"]


def test_this_projects_evaluation_and_sb3s_count_the_same_episodes(harness):
    for task in ("ppo-lunarlander", "td3-hopper"):
        doc = harness._manifest(harness.TASKS[task])
        copies = doc["environment"]["num_envs"]
        assert harness._eval_loop(doc) * copies >= harness.EVAL_EPISODES
