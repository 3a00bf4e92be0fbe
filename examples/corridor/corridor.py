"""A user's own Gymnasium environment, as a manifest names it (``corridor.yaml``):
walk right along a corridor of ``length`` cells to its end."""

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Observation: the position as a fraction of the length; actions: 0 left, 1 right;
    reward 1 on reaching the end, which ends the episode."""

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.position = 0

    def _observation(self) -> np.ndarray:
        return np.array([self.position / self.length], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random: Gymnasium's checker asks for it
        self.position = 0
        return self._observation(), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        reached = self.position >= self.length
        return self._observation(), float(reached), reached, False, {}


def make(length: int = 5, max_steps: int = 50) -> gym.Env:
    """The entry point: ``environment.config`` arrives as keyword arguments."""
    return gym.wrappers.TimeLimit(Corridor(length), max_steps)
