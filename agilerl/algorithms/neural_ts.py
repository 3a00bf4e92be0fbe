"""``NeuralTS``: Thompson sampling from the posterior of a neural reward model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from agilerl.algorithms.neural_bandit import NeuralBandit

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.neural_ts_schema import NeuralTSSpec
else:
    from agilerl.models.algorithms.neural_ts import NeuralTSSpec


class NeuralTS(NeuralBandit, spec=NeuralTSSpec):
    """Neural Thompson Sampling (Zhang et al., 2021): draws a score ``N(f(x),
    (gamma * sigma(x))^2)`` per arm from the agent's own generator and pulls the highest
    (:mod:`~agilerl.algorithms.neural_bandit` defines ``f`` and ``sigma``)."""

    def score(self, mean: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        noise = torch.as_tensor(self.rng.standard_normal(mean.shape[0]), device=mean.device)
        return mean + self.gamma * sigma * noise.to(mean)
