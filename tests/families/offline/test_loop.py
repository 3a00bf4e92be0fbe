"""Offline RL: HDF5 datasets and their refusals, CQN's regulariser and its conservative
effect, and offline runs through the trainer and the CLI (configs/cqn.yaml, kill and
resume). ``agilerl dataset collect``: tests/cli/test_dataset.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from gymnasium import spaces
from support import ROOT

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.dqn import DQN
from agilerl.cli import main
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.offline.collect import collect_transitions, write_dataset
from agilerl.families.offline.datasets import DatasetError, OfflineDataset, load_dataset
from agilerl.families.offline.loop import train_offline
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models.env import GymEnvSpec
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


def cartpole(num_envs: int = 2) -> object:
    return make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=num_envs, sync=True))


def random_dataset(path: Path, steps: int = 400, seed: int = 0) -> Path:
    env = cartpole()
    try:
        data, _ = collect_transitions(env, steps, seed=seed)
    finally:
        env.close()
    return write_dataset(path, data)


def rewrite(path: Path, key: str, value: object) -> None:
    with h5py.File(path, "a") as file:
        del file[key]
        if value is not None:
            file[key] = value


# --- the dataset file and its refusals ---------------------------------------------------


def test_a_collected_dataset_loads_against_the_environment(tmp_path):
    path = random_dataset(tmp_path / "d.h5")
    data = load_dataset(path, OBS, ACT)
    assert len(data) == 400
    assert data.observations.shape == data.next_observations.shape == (400, 4)
    assert data.actions.dtype == np.int64 and set(np.unique(data.actions)) == {0, 1}
    assert data.truncations is not None and data.rewards.shape == (400,)


BAD = {  # what is done to a good file -> what the error must name
    "missing key": (lambda n: ("rewards", None), ["'rewards' is missing", "next_observations"]),
    "rows differ": (
        lambda n: ("terminals", np.zeros(n - 1)),
        ["'terminals'", "(399,)", "(400, 4)"],
    ),
    "not one number per row": (
        lambda n: ("rewards", np.zeros((n, 2))),
        ["'rewards'", "(400, 2)", "expected (400,)"],
    ),
    "observations of another environment": (
        lambda n: ("observations", np.zeros((n, 3))),
        ["'observations'", "(400, 3)", "(4,)", "expected (400, 4)"],
    ),
    "next_observations unlike observations": (
        lambda n: ("next_observations", np.zeros((n, 5))),
        ["'next_observations'", "(400, 5)", "(400, 4)"],
    ),
    "actions of another shape": (
        lambda n: ("actions", np.zeros((n, 2), np.int64)),
        ["'actions'", "(400, 2)", "expected (400,)"],
    ),
    "action outside the space": (
        lambda n: ("actions", np.full(n, 2)),
        ["'actions' row 0 holds 2", "Discrete(2)"],
    ),
    "text instead of numbers": (
        lambda n: ("terminals", np.array([b"no"] * n)),
        ["'terminals'", "dtype", "(400,)"],
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_a_bad_dataset_is_refused_naming_the_key_and_shapes(tmp_path, case):
    path = random_dataset(tmp_path / "d.h5")
    rewrite(path, *BAD[case][0](400))
    with pytest.raises(DatasetError) as err:
        load_dataset(path, OBS, ACT, env_name="CartPole-v1")
    for part in [str(path), *BAD[case][1]]:
        assert part in str(err.value)


def test_a_missing_file_is_refused_and_nothing_is_downloaded(tmp_path):
    with pytest.raises(DatasetError, match="no such dataset file.*nothing is downloaded.*collect"):
        load_dataset(tmp_path / "absent.h5", OBS, ACT)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(DatasetError, match="text.h5: not a readable HDF5 file"):
        load_dataset(tmp_path / "text.h5")


def offline_trainer(dataset: Path, **training: object) -> LocalTrainer:
    return LocalTrainer(
        "CQN",
        {"name": "CartPole-v1", "num_envs": 2, "sync": True, "dataset_path": str(dataset)},
        {"max_steps": 40, "evo_steps": 20, "pop_size": 2, "seed": 0, "eval_steps": 50, **training},
        network=SMALL_NET,
    )


def test_the_trainer_refuses_a_bad_dataset_before_the_first_step(tmp_path):
    path = random_dataset(tmp_path / "d.h5")
    rewrite(path, "observations", np.zeros((400, 3)))
    out = tmp_path / "run"
    with pytest.raises(PreflightError, match=r"environment.dataset_path: .*'observations'.*\(4,\)"):
        offline_trainer(path).train(verbose=False, output_dir=out)
    assert not out.exists()  # refused before anything was written
    with pytest.raises(PreflightError, match="environment.dataset_path: .*no such dataset file"):
        offline_trainer(tmp_path / "absent.h5").train(verbose=False)


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ({"per_buffer": True}, "replay_buffer.per_buffer: CQN learns from uniform samples"),
        ({"n_step_buffer": True}, "replay_buffer.n_step_buffer"),
        ({"max_size": 100}, "replay_buffer.max_size: 100 is less than the dataset's 400"),
    ],
)
def test_replay_settings_an_offline_run_cannot_honour_are_refused(tmp_path, section, match):
    trainer = offline_trainer(random_dataset(tmp_path / "d.h5"))
    from agilerl.models.training import ReplayBufferSpec

    trainer.replay_buffer = ReplayBufferSpec(**section)
    with pytest.raises(PreflightError, match=match):
        trainer.train(verbose=False)


# --- CQN ---------------------------------------------------------------------------------


def test_the_regulariser_is_the_papers_logsumexp_minus_the_data_action():
    agent = CQN(OBS, ACT, seed=0, alpha=2.0, net_config=SMALL_NET)
    batch = {"obs": torch.randn(16, 4), "action": torch.randint(0, 2, (16,)),
             "reward": torch.randn(16), "next_obs": torch.randn(16, 4),
             "done": torch.zeros(16)}  # fmt: skip
    with torch.no_grad():
        q = agent.actor(batch["obs"])
        taken = q.gather(1, batch["action"].view(-1, 1)).squeeze(1)
        expected = (torch.logsumexp(q, dim=1) - taken).mean().item()
        # the reference's variant (minus the mean over actions) differs on this batch
        assert abs(expected - (torch.logsumexp(q, 1) - q.mean(1)).mean().item()) > 1e-4
    figures = agent.learn(batch)
    assert figures["cql_loss"] == pytest.approx(expected, rel=1e-5)
    assert figures["loss"] == pytest.approx(2.0 * expected + 0.5 * figures["td_loss"], rel=1e-5)


class Controller:
    """A poor hand-written CartPole controller (push towards the side the pole leans),
    the stand-in for a partly trained agent: deterministic data without training one."""

    def eval_action(self, obs, action_mask=None):
        return (obs[:, 2] > 0).astype(np.int64)


@pytest.mark.slow
def test_cqn_learns_from_a_partly_good_dataset_and_stays_conservative():
    env = cartpole(num_envs=4)
    data, behaviour = collect_transitions(env, 20_000, Controller(), epsilon=0.1, seed=0)
    _, random_returns = collect_transitions(env, 4_000, seed=1)
    dataset = OfflineDataset(**data)
    results = {}
    for cls in (CQN, DQN):
        torch.manual_seed(0)
        memory = ReplayBuffer(len(dataset))
        dataset.fill(memory)
        agent = cls(OBS, ACT, batch_size=128, lr=1e-3, tau=0.01, seed=0, net_config=SMALL_NET)
        for _ in range(3_000):
            agent.learn(memory.sample(128))
        with torch.no_grad():
            q = agent.actor(torch.as_tensor(data["observations"])).numpy()
        rows = np.arange(len(dataset))
        ood = q[rows, 1 - data["actions"]].mean()  # the action the data did not take
        results[cls.__name__] = (agent.test(env, loop=4, seed=3), ood)
    env.close()
    random_return = np.mean(random_returns)  # about 22
    assert np.mean(behaviour) < 3 * random_return  # the data's own policy is poor (~44)
    cqn_return, cqn_ood = results["CQN"]
    assert cqn_return > 4 * random_return, results  # measured ~200
    assert cqn_ood < results["DQN"][1] - 1.0, results  # measured 19.5 against 22.7


# --- offline runs through the trainer and the CLI ----------------------------------------


def test_an_offline_run_trains_evolves_and_writes_its_outputs(tmp_path):
    dataset = random_dataset(tmp_path / "d.h5")
    trainer = offline_trainer(dataset)
    trainer.mutation, trainer.selection_strategy = None, None
    population, fitnesses = trainer.train(verbose=False, output_dir=tmp_path / "run")
    assert len(population) == 2 and len(fitnesses) == 2
    assert all(agent.steps == 40 for agent in population)  # 40 learning updates each
    history = json.loads((tmp_path / "run" / "history.json").read_text())
    assert len(history) == 2 and "cql_loss" in history[0]["agents"][0]["metrics"]
    written = (tmp_path / "run" / "manifest.yaml").read_text()
    assert f"dataset_path: {dataset.resolve()}" in written


class OwnLearnCQN(CQN):
    """An offline algorithm on the contract only (its own ``learn``, counted): it says it
    has no population update, so it trains alone, through its ``learn``."""

    learns_in_cohorts = False
    learned = 0  # on the class: clones made by the loop count too

    def learn(self, batch: dict) -> dict[str, float]:
        type(self).learned += 1
        return super().learn(batch)


def test_an_offline_agent_without_a_population_update_trains_alone(tmp_path):
    OwnLearnCQN.learned = 0
    env = cartpole()
    memory = ReplayBuffer(1_000)
    pop = [
        OwnLearnCQN(env.single_observation_space, env.single_action_space, net_config=SMALL_NET,
                    batch_size=16, index=i, seed=i)
        for i in range(2)
    ]  # fmt: skip
    dataset = load_dataset(random_dataset(tmp_path / "d.h5"))
    try:
        pop, fitnesses = train_offline(
            env, "CartPole-v1", "CQN", pop, memory, dataset=dataset, cohorts=True,
            max_steps=30, evo_steps=30, eval_steps=20, verbose=False,
        )  # fmt: skip
    finally:
        env.close()
    assert OwnLearnCQN.learned == 2 * 30  # every update of both agents, on their own learn
    assert [agent.steps for agent in pop] == [30, 30] and len(fitnesses) == 2


BRIEF = ["--set", "training.max_steps=60", "--set", "training.evo_steps=20",
         "--set", "training.pop_size=2", "--set", "environment.num_envs=2",
         "--set", "algorithm.batch_size=32", "--set", "training.eval_steps=60",
         "--set", "training.seed=0"]  # fmt: skip


def agilerl(*args, cwd):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "agilerl.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)  # fmt: skip


def test_configs_cqn_trains_briefly_through_agilerl_train(tmp_path, capsys):
    dataset = random_dataset(tmp_path / "cartpole.h5", steps=600)
    args = ["train", str(ROOT / "configs/cqn.yaml"), "--out", str(tmp_path / "run"), *BRIEF,
            "--set", f"environment.dataset_path={dataset}", "--set", "environment.sync=true"]  # fmt: skip
    assert main(args) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "generation 2" in err and "CQN on CartPole-v1" in err
    # learn_step plays no role offline: not mutated, so not a column of the table; nor
    # is a training score (updates play no episodes)
    head = next(line for line in err.splitlines() if line.lstrip().startswith("agent "))
    assert "batch_size" in head and "lr" in head and "learn_step" not in head
    assert "train score" not in head
    for output in ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png",
                   "history.json", "checkpoint.pt"):  # fmt: skip
        assert (tmp_path / "run" / output).exists(), output
    assert main(["evaluate", str(tmp_path / "run" / "best_agent.pt"), "--episodes", "2"]) == 0
    assert "CartPole-v1: 2 episodes" in capsys.readouterr().out


def test_configs_cqn_without_its_dataset_says_how_to_make_it(tmp_path, capsys):
    args = ["train", str(ROOT / "configs/cqn.yaml"), "--out", str(tmp_path / "run"), *BRIEF,
            "--set", f"environment.dataset_path={tmp_path / 'none.h5'}"]  # fmt: skip
    assert main(args) == 1
    assert "agilerl dataset collect" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_offline_run_resumes_where_it_stood(tmp_path, capsys):
    """Killed at its first checkpoint and resumed, a CQN run gives the fitnesses an
    uninterrupted run gives."""
    from support.killed_runs import kill_at_first_checkpoint

    dataset = random_dataset(tmp_path / "cartpole.h5", steps=600)
    steps = [*BRIEF, "--set", f"environment.dataset_path={dataset}", "--quiet"]
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main(["train", str(ROOT / "configs/cqn.yaml"), "--out", str(whole), *steps]) == 0
    command = [sys.executable, "-m", "agilerl.cli", "train", str(ROOT / "configs/cqn.yaml"),
               "--out", str(killed), *steps]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    kill_at_first_checkpoint(command, killed / "checkpoint.pt", env)
    assert not (killed / "history.json").exists()  # it did not finish
    result = agilerl(*command[3:], "--resume", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stdout  # in the one line of --quiet

    def fitnesses(run):
        history = json.loads((run / "history.json").read_text())
        return [[a["fitness"] for a in gen["agents"]] for gen in history]

    assert len(fitnesses(whole)) == 3
    assert fitnesses(killed) == fitnesses(whole)


def test_init_cqn_no_longer_warns(tmp_path, capsys):
    assert main(["init", "CQN", "-o", str(tmp_path / "cqn.yaml")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_cqn_resolves_its_training_function_and_keeps_alpha_through_files(tmp_path):
    from agilerl.algorithms import RLAlgorithm
    from agilerl.models import CQNSpec
    from agilerl.training import train_offline

    assert CQNSpec.get_training_fn() is train_offline
    agent = CQN(OBS, ACT, seed=0, alpha=0.3, double=True)
    agent.save_checkpoint(tmp_path / "cqn.pt")
    loaded = RLAlgorithm.load(tmp_path / "cqn.pt")
    assert type(loaded) is CQN and loaded.alpha == 0.3 and loaded.double
    assert agent.clone().alpha == 0.3
    with pytest.raises(ValueError, match="alpha"):
        CQN(OBS, ACT, alpha=-1.0)


def test_train_offline_fills_an_empty_buffer_once_from_the_dataset(tmp_path):
    from agilerl.training import train_offline

    dataset = load_dataset(random_dataset(tmp_path / "d.h5"), OBS, ACT)
    env = cartpole()
    pop = [CQN(OBS, ACT, i, batch_size=32, seed=i, net_config=SMALL_NET) for i in range(2)]
    memory = ReplayBuffer(len(dataset))
    with pytest.raises(ValueError, match="memory is empty and no dataset"):
        train_offline(env, "CartPole-v1", "CQN", pop, memory, max_steps=10, evo_steps=10)
    pop, fitnesses = train_offline(env, "CartPole-v1", "CQN", pop, memory, dataset=dataset,
                                   max_steps=20, evo_steps=10, eval_steps=40, verbose=False)  # fmt: skip
    env.close()
    assert len(memory) == len(dataset) == 400  # filled once, nothing added while training
    assert [agent.steps for agent in pop] == [20, 20] and len(fitnesses) == 2
    assert all(len(agent.fitness) == 2 for agent in pop)  # evaluated every generation


def test_an_external_or_soft_link_is_refused_before_anything_is_read(tmp_path):
    other = random_dataset(tmp_path / "other.h5")
    path = random_dataset(tmp_path / "d.h5")
    with h5py.File(path, "a") as file:
        del file["rewards"]
        file["rewards"] = h5py.ExternalLink(str(other), "/rewards")
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert str(err.value) == (
        f"{path}: key 'rewards' is an external link to {other}:/rewards; a dataset file "
        "holds its own arrays (links are not followed)"
    )
    with h5py.File(path, "a") as file:
        del file["rewards"]
        file["rewards"] = h5py.SoftLink("/terminals")
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert str(err.value) == (
        f"{path}: key 'rewards' is a soft link to /terminals; a dataset file holds its "
        "arrays under their own keys (links are not followed)"
    )


def test_an_array_compressed_with_an_unknown_filter_is_refused(tmp_path):
    path = random_dataset(tmp_path / "d.h5")
    with h5py.File(path, "a") as file:
        rewards = file["rewards"][()]
        del file["rewards"]
        file.create_dataset(
            "rewards", data=rewards, chunks=True, compression=32015, allow_unknown_filter=True
        )
    assert not h5py.h5z.filter_avail(32015)  # zstd, not registered without a plugin
    with pytest.raises(DatasetError) as err:
        load_dataset(path)
    assert str(err.value).startswith(
        f"{path}: key 'rewards' is compressed with HDF5 filter 32015 ("
    )
    assert str(err.value).endswith(
        "), which this h5py cannot decode; write the dataset with gzip, lzf or no compression"
    )


def test_an_agent_alone_updates_exactly_as_replay_learn_does(tmp_path):
    """The offline turn of one agent (P = 1 of the one turn: its own view of one, torch's
    global generator) draws the samples and makes the updates of ``Replay.learn``, the
    one-agent step of the other replay loops, float for float."""
    from agilerl.components.replay import Replay
    from agilerl.families.offline.loop import offline_turns
    from agilerl.training.state import RunState
    from agilerl.training.tracking import MeanMetrics

    dataset = load_dataset(random_dataset(tmp_path / "d.h5"), OBS, ACT)
    memory = ReplayBuffer(len(dataset))
    dataset.fill(memory)
    turned = CQN(OBS, ACT, 0, batch_size=32, seed=0, net_config=SMALL_NET)
    alone = turned.clone()
    env = cartpole()
    try:
        turns = offline_turns(env, memory, [turned])
    finally:
        env.close()
    torch.manual_seed(7)
    [(taken, scores, metrics)] = turns.train([turned], [0], 5, RunState(seed=0))
    torch.manual_seed(7)
    reported = MeanMetrics()
    for _ in range(5):
        reported.add(Replay.of(memory).learn(alone))
    assert (taken, scores, turned.steps) == (5, [], 5)
    assert metrics == reported.means()
    for name in turned._network_attrs():  # the online and the target network
        for mine, theirs in zip(
            getattr(turned, name).parameters(), getattr(alone, name).parameters(), strict=True
        ):
            assert torch.equal(mine, theirs), name


def test_an_offline_run_refuses_a_prioritised_memory():
    from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
    from agilerl.families.offline.loop import offline_turns

    agent = CQN(OBS, ACT, 0, batch_size=32, seed=0, net_config=SMALL_NET)
    with pytest.raises(ValueError, match="memory: offline agents learn from uniform samples"):
        offline_turns(None, PrioritizedReplayBuffer(100), [agent])
