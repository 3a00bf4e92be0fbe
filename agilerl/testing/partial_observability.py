"""Partially observed variants of standard environments, for testing memory (recurrent
policies): :class:`KeepObservations` hides entries of a flat Box observation.

``KeepObservations`` on CartPole-v1 with its default ``keep=(0, 2)`` leaves the cart
position and the pole angle and hides both velocities, so a policy must infer them from
successive observations; a manifest names it as
``agilerl.testing.partial_observability.KeepObservations``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class KeepObservations(gym.ObservationWrapper):
    """Only the entries ``keep`` (indices into a 1-D Box observation) are observed."""

    def __init__(self, env: gym.Env, keep: Sequence[int] = (0, 2)) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 1:
            raise TypeError(f"KeepObservations needs a 1-D Box observation space, got {space!r}")
        self.keep = np.asarray(list(keep), dtype=np.int64)
        if self.keep.size == 0 or not np.all((self.keep >= 0) & (self.keep < space.shape[0])):
            raise ValueError(
                f"keep must list indices of the {space.shape[0]} observation entries, "
                f"got {list(keep)}"
            )
        self.observation_space = spaces.Box(
            space.low[self.keep], space.high[self.keep], dtype=space.dtype
        )

    def observation(self, observation: Any) -> np.ndarray:
        return np.asarray(observation)[self.keep]
