"""CQN's training speed offline: learning updates per second on CartPole-v1 data, beside
DQN's on the same data, with the network of ``configs/cqn.yaml``, and what CQN's
evaluation return is after them. One torch thread (as the trainer chooses for agents
this small on the CPU).

    OMP_NUM_THREADS=1 python benchmarks/cqn_offline.py [--updates 3000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.dqn import DQN
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.offline.collect import collect_transitions
from agilerl.families.offline.datasets import OfflineDataset
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models.env import GymEnvSpec
from agilerl.models.manifest import load_manifest


class Controller:
    """Push towards the side the pole leans: a poor policy (return ~44 at epsilon 0.1)."""

    def eval_action(self, obs, action_mask=None):
        return (obs[:, 2] > 0).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=3000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    network = load_manifest("configs/cqn.yaml").network.model_dump(exclude_none=True)
    env = make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=4, sync=True))
    data, behaviour = collect_transitions(env, 20_000, Controller(), epsilon=0.1, seed=0)
    dataset = OfflineDataset(**data)
    print(f"dataset: {len(dataset):,} transitions, behaviour return {np.mean(behaviour):.1f}")
    for cls in (CQN, DQN):
        torch.manual_seed(0)
        memory = ReplayBuffer(len(dataset))
        dataset.fill(memory)
        agent = cls(
            env.single_observation_space,
            env.single_action_space,
            batch_size=128,
            lr=1e-3,
            tau=0.01,
            seed=0,
            net_config=network,
        )
        start = time.perf_counter()
        for _ in range(args.updates):
            agent.learn(memory.sample(agent.batch_size))
        seconds = time.perf_counter() - start
        score = agent.test(env, loop=4, seed=3)
        print(
            f"{cls.__name__}: {args.updates / seconds:,.0f} updates/s (batch 128, sampling "
            f"included), evaluation return {score:.1f} after {args.updates:,} updates"
        )
    env.close()


if __name__ == "__main__":
    main()
