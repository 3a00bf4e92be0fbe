"""``ScaledTargetEnv``: a one-step continuous task whose observations and rewards are far
from unit scale, the case running normalisation exists for (PPO's ``normalize``).

Each episode draws a target ``t`` uniform in ``[-1, 1]`` and shows it as the observation
``offset + scale * t`` (500 +- 200 by default); the action ``a`` in ``[-1, 1]`` earns
``-reward_scale * (a - t)^2`` (-100 x the squared error) and ends the episode. The
optimum is ``a = t`` (return 0); always acting 0 earns ``-reward_scale / 3`` on average.
A policy network fed the raw observation sees one large, nearly constant input; with
normalised observations it sees ``t`` itself.

This module imports only gymnasium and numpy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class ScaledTargetEnv(gym.Env):
    """See the module docstring."""

    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, offset: float = 500.0, scale: float = 200.0, reward_scale: float = 100.0):
        self.offset, self.scale, self.reward_scale = (
            float(offset),
            float(scale),
            float(reward_scale),
        )
        bound = abs(self.offset) + abs(self.scale)
        self.observation_space = spaces.Box(-bound, bound, (1,), np.float32)
        self.target = 0.0

    def _obs(self) -> np.ndarray:
        return np.array([self.offset + self.scale * self.target], np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.target = float(self.np_random.uniform(-1.0, 1.0))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        error = float(np.clip(np.asarray(action, np.float64).reshape(-1)[0], -1, 1)) - self.target
        return self._obs(), -self.reward_scale * error**2, True, False, {}
