"""Offline runs from Minari datasets in the local Minari data directory: the episodes as
transitions, the refusals (an id not there, ``remote: true``, minari missing), CQN
trained from one through the trainer and the CLI, and (slow) learning by outcome."""

from __future__ import annotations

import sys

import minari
import numpy as np
import pytest
import yaml
from gymnasium import spaces
from support.minari_data import write_cartpole_dataset

from agilerl.cli import main
from agilerl.families.offline.datasets import DatasetError
from agilerl.families.offline.family import LOADERS
from agilerl.families.offline.minari_datasets import load_minari_dataset
from agilerl.models.algorithms import CQNSpec
from agilerl.models.env import OFFLINE_SOURCES
from agilerl.trainer import LocalTrainer
from agilerl.training.preflight import PreflightError

OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)
ACT = spaces.Discrete(2)
SMALL_NET = {
    "arch": "mlp",
    "latent_dim": 32,
    "encoder_config": {"hidden_size": [64]},
    "head_config": {"hidden_size": [64]},
}
DATASET = "cartpole/random-v0"


@pytest.fixture
def minari_dir(tmp_path, monkeypatch):
    """An empty local Minari data directory of this test's own."""
    root = tmp_path / "minari"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


def test_episodes_become_transitions_row_by_row(minari_dir):
    steps = write_cartpole_dataset(DATASET, 300)
    data = load_minari_dataset(DATASET, OBS, ACT, "CartPole-v1")
    episodes = list(minari.load_dataset(DATASET).iterate_episodes())
    assert len(data) == steps == sum(len(e) for e in episodes) >= 300
    start = 0
    for episode in episodes:
        rows = slice(start, start + len(episode))
        # row i goes from observation i to observation i + 1 of its episode; the last
        # row's next observation is the one the episode ended on
        np.testing.assert_array_equal(data.observations[rows], episode.observations[:-1])
        np.testing.assert_array_equal(data.next_observations[rows], episode.observations[1:])
        np.testing.assert_array_equal(data.actions[rows], episode.actions)
        np.testing.assert_array_equal(data.rewards[rows], episode.rewards)
        np.testing.assert_array_equal(data.terminals[rows], episode.terminations)
        assert data.truncations is not None
        np.testing.assert_array_equal(data.truncations[rows], episode.truncations)
        start += len(episode)
    # random CartPole episodes end by falling over: one terminal per episode, at its end
    assert data.terminals.sum() == len(episodes) and data.terminals[-1] == 1
    assert data.actions.dtype == np.int64 and data.observations.dtype == np.float32


def test_the_dataset_is_checked_against_the_evaluation_environment(minari_dir):
    write_cartpole_dataset(DATASET, 50)
    wide = spaces.Box(-np.inf, np.inf, (6,), np.float32)
    with pytest.raises(DatasetError, match=r"cartpole/random-v0 .*'observations'.*\(6,\)"):
        load_minari_dataset(DATASET, wide, ACT, "Wide-v0")
    with pytest.raises(DatasetError, match="outside Wide-v0's action space"):
        load_minari_dataset(DATASET, OBS, spaces.Discrete(1), "Wide-v0")


def test_an_id_not_in_the_local_directory_is_refused_with_the_command_that_fetches_it(
    minari_dir,
):
    with pytest.raises(DatasetError) as info:
        load_minari_dataset("cartpole/expert-v0", OBS, ACT)
    message = str(info.value)
    assert str(minari_dir) in message and "`minari download cartpole/expert-v0`" in message
    assert not minari_dir.exists()  # looking did not make the directory, nor download


def test_without_minari_the_error_names_the_extra(minari_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "minari", None)  # import minari raises ImportError
    with pytest.raises(DatasetError, match=r"pip install 'agilespec\[offline\]'"):
        load_minari_dataset(DATASET)


def test_every_source_the_schema_allows_has_a_loader():
    assert set(LOADERS) == set(OFFLINE_SOURCES)


def minari_trainer(**environment: object) -> LocalTrainer:
    return LocalTrainer(
        "CQN",
        {"name": "CartPole-v1", "num_envs": 2, "sync": True, **environment},
        {"max_steps": 40, "evo_steps": 20, "pop_size": 2, "seed": 0, "eval_steps": 50},
        network=SMALL_NET,
    )


def test_cqn_trains_from_a_minari_dataset_and_its_run_names_the_id(minari_dir, tmp_path):
    write_cartpole_dataset(DATASET, 300)
    trainer = minari_trainer(minari_dataset_id=DATASET)
    population, fitnesses = trainer.train(verbose=False, output_dir=tmp_path / "run")
    assert len(population) == len(fitnesses) == 2
    assert all(agent.steps == 40 for agent in population)
    written = yaml.safe_load((tmp_path / "run" / "manifest.yaml").read_text())
    assert written["environment"]["minari_dataset_id"] == DATASET
    assert "dataset_path" not in written["environment"]


def test_a_run_refuses_a_missing_id_before_the_first_step(minari_dir):
    trainer = minari_trainer(minari_dataset_id="cartpole/expert-v0")
    with pytest.raises(PreflightError) as info:
        trainer.train(verbose=False)
    message = str(info.value)
    assert message.startswith("environment.minari_dataset_id: cartpole/expert-v0: ")
    assert "`minari download cartpole/expert-v0`" in message


def test_remote_true_is_refused_by_validate_and_by_a_run(minari_dir, tmp_path, capsys):
    write_cartpole_dataset(DATASET, 50)  # present, still refused: nothing is downloaded
    trainer = minari_trainer(minari_dataset_id=DATASET, remote=True)
    with pytest.raises(PreflightError, match=r"^environment.remote: nothing is downloaded"):
        trainer.train(verbose=False)
    manifest = tmp_path / "cqn.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "algorithm": {"name": "CQN"},
                "environment": {
                    "name": "CartPole-v1",
                    "minari_dataset_id": DATASET,
                    "remote": True,
                },
            }
        )
    )
    assert main(["validate", str(manifest)]) != 0
    err = capsys.readouterr().err
    assert "environment.remote" in err and f"minari download {DATASET}" in err


def test_agilerl_train_reads_a_minari_manifest_and_evaluates_without_the_dataset(
    minari_dir, tmp_path, capsys
):
    write_cartpole_dataset(DATASET, 300)
    manifest = tmp_path / "cqn.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "algorithm": {"name": "CQN", "batch_size": 32},
                "environment": {
                    "name": "CartPole-v1",
                    "num_envs": 2,
                    "sync": True,
                    "minari_dataset_id": DATASET,
                },
                "network": SMALL_NET,
                "training": {
                    "max_steps": 40,
                    "evo_steps": 20,
                    "pop_size": 2,
                    "eval_steps": 50,
                    "seed": 0,
                },
            }
        )
    )
    assert main(["validate", str(manifest)]) == 0
    assert main(["train", str(manifest), "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "run" / "best_agent.pt"), "--episodes", "2"]) == 0
    assert "CartPole-v1: 2 episodes" in capsys.readouterr().out


def upright(observation: np.ndarray, rng: np.random.Generator) -> int:
    """Push towards the pole's lean, one action in ten at random: a poor controller
    (returns of about 40; random play's are about 22)."""
    if rng.random() < 0.1:
        return int(rng.integers(2))
    return int(observation[2] > 0)


@pytest.mark.slow
def test_cqn_learns_from_a_minari_dataset_of_a_poor_controller(minari_dir):
    steps = write_cartpole_dataset("cartpole/upright-v0", 20_000, upright)
    returns_of_data = steps / len(list(minari.load_dataset("cartpole/upright-v0")))
    trainer = LocalTrainer(
        CQNSpec(batch_size=128, lr=1e-3, tau=0.01),
        {
            "name": "CartPole-v1",
            "num_envs": 4,
            "sync": True,
            "minari_dataset_id": "cartpole/upright-v0",
        },
        {"max_steps": 3_000, "evo_steps": 3_000, "pop_size": 1, "seed": 0, "eval_loop": 4},
        network=SMALL_NET,
    )
    trainer.mutation, trainer.selection_strategy = None, None
    _, fitnesses = trainer.train(verbose=False)
    assert returns_of_data < 60  # the data's own policy is poor
    assert fitnesses[0] > 3 * returns_of_data, (fitnesses, returns_of_data)
