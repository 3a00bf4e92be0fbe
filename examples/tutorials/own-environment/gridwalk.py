"""A Gymnasium environment of your own: walk from one corner of a square grid to the other.

The manifest ``gridwalk.yaml`` names ``make`` (``environment.entrypoint: gridwalk.py:make``);
``train.py`` hands ``GridWalk`` to Python directly.
"""

import gymnasium as gym
import numpy as np

MOVES = np.array([(0, 1), (1, 0), (0, -1), (-1, 0)])  # up, right, down, left


class GridWalk(gym.Env):
    """Start at (0, 0), reach (size-1, size-1). Observation: the position scaled to [0, 1];
    actions: the four moves (a move into a wall stays put); reward -0.05 a step and 1 at
    the goal, which ends the episode. The best return is 1 - 0.05 * (2 * size - 3)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.position = np.zeros(2, dtype=np.int64)

    def _observation(self) -> np.ndarray:
        return (self.position / (self.size - 1)).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random: Gymnasium's checker asks for it
        self.position = np.zeros(2, dtype=np.int64)
        return self._observation(), {}

    def step(self, action):
        self.position = np.clip(self.position + MOVES[int(action)], 0, self.size - 1)
        reached = bool((self.position == self.size - 1).all())
        reward = 1.0 if reached else -0.05
        return self._observation(), reward, reached, False, {}


def make(size: int = 4, max_steps: int = 40) -> gym.Env:
    """The entry point a manifest names: ``environment.config`` arrives as keyword arguments.
    The time limit cuts an episode that wanders (the loops bootstrap through a cut)."""
    return gym.wrappers.TimeLimit(GridWalk(size), max_steps)
