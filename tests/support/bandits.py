"""Small bandits and table files for the tests of the bandit family."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.families.bandits import BanditEnv

#: A small network for the tests' bandits.
NET = {
    "latent_dim": 32,
    "encoder_config": {"hidden_size": [64]},
    "head_config": {"hidden_size": [64]},
}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def agent(cls=NeuralUCB, arms=3, dim=2, **kwargs):
    """A seeded bandit of ``cls`` and its environment: 30 random rows of ``dim`` features,
    ``arms`` classes in turn."""
    torch.manual_seed(0)
    env = BanditEnv(np.random.default_rng(0).normal(size=(30, dim)), np.arange(30) % arms)
    kwargs.setdefault("net_config", NET)
    return cls(env.observation_space, env.action_space, seed=0, **kwargs), env
