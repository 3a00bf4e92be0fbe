"""``NeuralTS``: Thompson sampling from the posterior of a neural reward model."""

from __future__ import annotations

from typing import Any

import torch
from gymnasium import spaces

from agilerl.algorithms.neural_bandit import NeuralBandit


class NeuralTS(NeuralBandit):
    """Neural Thompson Sampling (Zhang et al., 2021): draws a score ``N(f(x),
    (gamma * sigma(x))^2)`` per arm from the agent's own generator and pulls the highest
    (:mod:`~agilerl.algorithms.neural_bandit` defines ``f`` and ``sigma``)."""

    # The constructor's defaults are the schema's (a test holds them equal), and NeuralTS's
    # learning rate default (3e-3) is not NeuralUCB's: hence this signature.
    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        index: int = 0,
        *,
        batch_size: int = 128,
        lr: float = 3e-3,
        learn_step: int = 2,
        gamma: float = 1.0,
        lamb: float = 1.0,
        reg: float = 0.000625,
        hp_config: Any = None,
        net_config: Any = None,
        device: str | torch.device = "cpu",
        accelerator: Any = None,
        seed: int | None = None,
    ) -> None:
        super().__init__(
            observation_space, action_space, index, batch_size=batch_size, lr=lr,
            learn_step=learn_step, gamma=gamma, lamb=lamb, reg=reg, hp_config=hp_config,
            net_config=net_config, device=device, accelerator=accelerator, seed=seed,
        )  # fmt: skip

    def score(self, mean: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        noise = torch.as_tensor(self.rng.standard_normal(mean.shape[0]), device=mean.device)
        return mean + self.gamma * sigma * noise.to(mean)
