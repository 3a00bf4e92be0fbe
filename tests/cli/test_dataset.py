"""``agilerl dataset collect`` (agilerl/cli/dataset.py): an HDF5 dataset of transitions
from a random policy or a saved agent (greedy, or epsilon-greedy), seeded, from a
Gymnasium id or a manifest; and what it refuses, each in one line, writing nothing."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from support import ROOT
from support.agent_files import NET

from agilerl.algorithms.dqn import DQN
from agilerl.cli import main
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.offline.datasets import load_dataset

#: CartPole's spaces, which its datasets are loaded against.
_CARTPOLE = gym.make("CartPole-v1")
OBS, ACT = _CARTPOLE.observation_space, _CARTPOLE.action_space
_CARTPOLE.close()


def test_collect_round_trip_with_a_random_policy(tmp_path, capsys):
    path = tmp_path / "random.h5"
    args = ["dataset", "collect", "CartPole-v1", "-o", str(path), "--steps", "300"]
    assert main([*args, "--seed", "3"]) == 0
    assert (
        f"wrote {path}: 300 transitions of CartPole-v1 (random policy)" in capsys.readouterr().out
    )
    data = load_dataset(path, OBS, ACT)
    # A Gymnasium id is collected in one environment: each row's next observation is the next row's
    # observation unless the episode ended there.
    ended = np.logical_or(data.terminals, data.truncations)[:-1].astype(bool)
    same = np.all(data.next_observations[:-1] == data.observations[1:], axis=1)
    assert same[~ended].all() and not same[ended].any()
    again = tmp_path / "again.h5"
    assert main([*args[:4], str(again), *args[5:], "--seed", "3"]) == 0
    assert np.array_equal(load_dataset(again).actions, data.actions)  # seeded


def test_collect_from_a_manifest_finds_its_entry_point_beside_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # not the manifest's folder
    path = tmp_path / "corridor.h5"
    manifest = str(ROOT / "examples/corridor/corridor.yaml")
    assert main(["dataset", "collect", manifest, "-o", str(path), "--steps", "60"]) == 0
    assert "60 transitions of corridor (random policy)" in capsys.readouterr().out


def test_collect_round_trip_with_a_trained_agent(tmp_path, capsys):
    agent = DQN(OBS, ACT, seed=0, net_config=NET)
    memory = ReplayBuffer(1000)
    memory.add(*(torch.randn(64, 4), torch.randint(0, 2, (64,)), torch.ones(64)),
               torch.randn(64, 4), torch.zeros(64))  # fmt: skip
    for _ in range(5):
        agent.learn(memory.sample(32))
    agent_file = tmp_path / "best_agent.pt"
    agent.save_checkpoint(agent_file)
    path = tmp_path / "greedy.h5"
    assert main(["dataset", "collect", "CartPole-v1", "-o", str(path), "--steps", "200",
                 "--policy", str(agent_file), "--epsilon", "0"]) == 0  # fmt: skip
    data = load_dataset(path, OBS, ACT)
    assert np.array_equal(data.actions, agent.eval_action(data.observations))  # greedy
    half = tmp_path / "half.h5"
    assert main(["dataset", "collect", "CartPole-v1", "-o", str(half), "--steps", "400",
                 "--policy", str(agent_file), "--epsilon", "0.5"]) == 0  # fmt: skip
    mixed = load_dataset(half)
    off = np.mean(mixed.actions != agent.eval_action(mixed.observations))
    assert 0.1 < off < 0.4  # half the actions random, half of those differ from greedy


def test_collect_refuses_what_it_cannot_do(tmp_path, capsys):
    out = str(tmp_path / "x.h5")
    base = ["dataset", "collect", "CartPole-v1", "-o", out, "--steps", "10"]
    assert main([*base, "--epsilon", "0.2"]) == 1
    assert "--epsilon: the random policy" in capsys.readouterr().err
    (tmp_path / "evil.pt").write_bytes(b"\x80\x04K\x01.")  # a pickle, not an agent file
    assert main([*base, "--policy", str(tmp_path / "evil.pt")]) == 1
    assert "evil.pt" in capsys.readouterr().err
    agent_file = tmp_path / "agent.pt"
    DQN(OBS, ACT, seed=0).save_checkpoint(agent_file)
    assert main(["dataset", "collect", "MountainCar-v0", "-o", out, "--steps", "10",
                 "--policy", str(agent_file)]) == 1  # fmt: skip
    assert "MountainCar-v0 has (2,)" in capsys.readouterr().err
    assert main(["dataset", "collect", "CartPole-v1", "-o", str(tmp_path / "no" / "x.h5"),
                 "--steps", "10"]) == 1  # fmt: skip
    assert f"no such directory {tmp_path / 'no'}" in capsys.readouterr().err
    assert not Path(out).exists()
