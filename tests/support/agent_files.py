"""Small agents and the agent files ``agilerl train`` writes, for the tests of evaluation
and of ``agilerl evaluate``."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import torch

from agilerl.algorithms import PPO

#: A network small enough for the tests' CPU runs.
NET = {"encoder_config": {"hidden_size": [16]}, "head_config": {"hidden_size": [16]}}


def small_agent(cls=PPO, env_id: str = "CartPole-v1", seed: int = 0):
    """An untrained agent of ``cls`` for ``env_id``'s spaces, its weights drawn from ``seed``."""
    env = gym.make(env_id)
    torch.manual_seed(seed)
    agent = cls(env.observation_space, env.action_space, net_config=NET, seed=seed)
    env.close()
    return agent


def save_agent_file(directory: Path) -> Path:
    """A CartPole PPO agent file that records its environment, as agilerl train writes."""
    agent = small_agent()
    agent.environment = {"name": "CartPole-v1"}
    path = directory / "agent.pt"
    agent.save_checkpoint(path)
    return path
