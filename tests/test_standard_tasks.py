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
        doc = harness._manifest(task, 200_000, None)
        assert doc["algorithm"]["name"] in harness.SB3_TRANSLATIONS, name
        assert name.split("-")[0] == doc["algorithm"]["name"].lower(), name


def test_ppo_keeps_the_rollout_minibatches_network_and_normalisation(harness):
    doc = harness._manifest(harness.TASKS["ppo-halfcheetah"], 200_000, None)
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
    doc = harness._manifest(harness.TASKS["td3-hopper"], 200_000, None)
    args = harness.SB3_TRANSLATIONS["TD3"](doc)
    assert args["kwargs"]["learning_starts"] == doc["training"]["learning_delay"]
    assert args["kwargs"]["policy_delay"] == doc["algorithm"]["policy_freq"]
    assert args["kwargs"]["train_freq"] == 1 and args["kwargs"]["gradient_steps"] == 1
    assert args["action_noise"] == doc["algorithm"]["expl_noise"]
    assert args["policy_kwargs"]["net_arch"] == [256, 256]
    assert "policy_delay" not in harness.SB3_TRANSLATIONS["DDPG"](doc)["kwargs"]


def test_this_projects_evaluation_and_sb3s_count_the_same_episodes(harness):
    for task in ("ppo-lunarlander", "td3-hopper"):
        doc = harness._manifest(harness.TASKS[task], 200_000, None)
        copies = doc["environment"]["num_envs"]
        assert harness._eval_loop(doc) * copies >= harness.EVAL_EPISODES


def test_the_run_sets_the_budget_and_evaluation_interval_of_both_sides(harness):
    task = harness.TASKS["ppo-lunarlander"]
    doc = harness._manifest(task, 50_000, 8_192)
    assert doc["training"]["max_steps"] == 50_000 and doc["training"]["evo_steps"] == 8_192
    args = harness.sb3_args(task, seed=2, steps=50_000, evo_steps=8_192)
    assert (args["steps"], args["seed"], args["eval_every"]) == (50_000, 2, 8_192)
    assert args["atari"] is None


def test_atari_runs_sb3s_cnn_policy_on_the_same_game_and_preprocessing(harness):
    args = harness.sb3_args(harness.TASKS["ppo-breakout"], seed=0, steps=125_000)
    assert args["env"] == "ALE/Breakout-v5"
    # no sticky actions on either side; the Nature preprocessing with 4 frames stacked
    assert args["env_kwargs"] == {"repeat_action_probability": 0.0}
    assert args["atari"] == {"frame_stack": 4}
    # the Nature CNN's 512 features on both sides, then this project's head of 256
    assert args["policy_kwargs"]["net_arch"] == {"pi": [256], "vf": [256]}
    assert args["kwargs"]["n_steps"] == 128 and args["n_envs"] == 8


def test_dqns_epsilon_schedule_becomes_sb3s_exploration_fraction(harness):
    # The manifest's multiplicative decay reaches eps_end after 1M env steps: a tenth of
    # the published 10M, RL Zoo's and CleanRL's exploration_fraction.
    doc = harness._manifest(harness.TASKS["dqn-pong"], 10_000_000, None)
    kwargs = harness.SB3_TRANSLATIONS["DQN"](doc)["kwargs"]
    assert kwargs["exploration_fraction"] == pytest.approx(0.1, rel=0.01)
    assert kwargs["exploration_final_eps"] == 0.01
    # an update every 4 env steps of 8 copies: two per vector step, and two taus at once
    assert (kwargs["train_freq"], kwargs["gradient_steps"]) == (1, 2)
    tau = doc["algorithm"]["tau"]
    assert kwargs["tau"] == pytest.approx(1 - (1 - tau) ** 2)


def test_a_budget_shorter_than_the_decay_keeps_the_published_schedule_on_sb3s_side(harness):
    # 125k steps (500k frames) end an eighth of the way through the decay: SB3's epsilon
    # must fall as slowly (a fraction above 1, which its LinearSchedule takes), not reach
    # 0.01 at the end of the short run while this project's is still at 0.56.
    doc = harness._manifest(harness.TASKS["dqn-pong"], 125_000, None)
    kwargs = harness.SB3_TRANSLATIONS["DQN"](doc)["kwargs"]
    assert kwargs["exploration_fraction"] == pytest.approx(1_000_000 / 125_000, rel=0.01)


def _results(harness, seeds, runs, steps=50_000, best=0.0):
    import argparse

    args = argparse.Namespace(steps=steps, evo_steps=None, seeds=seeds, runs=runs)
    results = harness.header("td3-halfcheetah", args)
    for run in runs:
        for seed in seeds:
            curve = {"steps": [steps], "best": [best + seed], "mean": [best], "seconds": 1.0}
            results["runs"][run].append({**curve, "agents": 1, "seed": seed})
    return results


def test_a_later_seed_is_added_to_the_results_measured_before(harness):
    earlier = _results(harness, [0, 1], ["single", "population", "sb3"])
    later = _results(harness, [2], ["population"], best=100.0)
    results = harness.merged(earlier, later)
    assert results["seeds"] == [0, 1, 2]
    assert [c["seed"] for c in results["runs"]["population"]] == [0, 1, 2]
    assert results["runs"]["population"][2]["best"] == [102.0]
    # the runs not measured again are kept as they were
    assert results["runs"]["single"] == earlier["runs"]["single"]
    assert results["runs"]["sb3"] == earlier["runs"]["sb3"]


def test_a_seed_measured_again_replaces_its_earlier_curve(harness):
    earlier = _results(harness, [0, 1], ["single"])
    again = _results(harness, [1], ["single"], best=50.0)
    curves = harness.merged(earlier, again)["runs"]["single"]
    assert [c["best"] for c in curves] == [[0.0], [51.0]]


def test_results_of_another_budget_are_refused_unless_started_anew(harness):
    earlier = _results(harness, [0], ["single"])
    other = _results(harness, [1], ["single"], steps=20_000)
    with pytest.raises(SystemExit, match="--steps 50000 .*not 20000"):
        harness.merged(earlier, other)
    assert harness.merged(earlier, other, fresh=True) is other


def test_each_generation_of_a_run_prints_its_steps_and_fitness(harness, capsys):
    from types import SimpleNamespace

    lines = harness.GenerationLines("td3_halfcheetah.yaml seed 2 population")
    record = {"steps": 20_000, "agents": [{"fitness": 10.0}, {"fitness": 30.0}]}
    assert lines.on_generation(SimpleNamespace(history=[{}, record])) is None
    err = capsys.readouterr().err
    assert err.startswith(
        "td3_halfcheetah.yaml seed 2 population: 20,000 steps per agent, best 30.0, mean 20.0, "
    )
