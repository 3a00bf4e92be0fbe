"""An environment whose episodes never end (reward 1 a step, no step terminates or
truncates), given in Python or, this file copied beside a manifest, by the entry point
``endless.py:Endless``."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class Endless(gym.Env):
    """One constant observation, two actions, reward 1 for every step, for ever."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return np.zeros(1, np.float32), 1.0, False, False, {}
