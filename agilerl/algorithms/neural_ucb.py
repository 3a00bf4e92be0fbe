"""``NeuralUCB``: optimism in the face of uncertainty over a neural reward model."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from agilerl.algorithms.neural_bandit import NeuralBandit

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.neural_ucb_schema import NeuralUCBSpec
else:
    from agilerl.models.algorithms.neural_ucb import NeuralUCBSpec


class NeuralUCB(NeuralBandit, spec=NeuralUCBSpec):
    """Neural Upper Confidence Bound (Zhou et al., 2020): pulls the arm of highest
    ``f(x) + gamma * sigma(x)`` (:mod:`~agilerl.algorithms.neural_bandit` defines both)."""

    def score(self, mean: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        return mean + self.gamma * sigma
