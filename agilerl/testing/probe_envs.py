"""Probe environments: tiny Gymnasium tasks whose values are known exactly.

A value learner that works must converge to these values on each probe; one that does not
fails on the first probe whose ingredient it gets wrong, which localises the bug (the idea
of Andy Jones' "debugging RL" probes):

=============================  ==========================================================
probe                          isolates
=============================  ==========================================================
:class:`ConstantRewardEnv`     value learning itself: one constant observation, reward 1,
                               one step, so ``V = Q = 1``. Failing here means the loss,
                               the optimiser or the terminal handling is broken (a learner
                               that bootstraps past the end finds ``1 / (1 - gamma)``).
:class:`ObservationRewardEnv`  observation dependence: the observation is -1 or +1 at
                               random and so is the reward, one step: ``V(obs) = obs``.
                               Failing here (with the first probe passing) points at how
                               observations reach the network (preprocessing, batching).
:class:`DiscountedRewardEnv`   discounting and bootstrapping: observation 0 then 1, reward 0
                               then 1, so ``V(0) = gamma`` and ``V(1) = 1``. Failing here
                               points at the TD target: ``gamma``, ``next_obs``, the target
                               network, the return computation.
:class:`ActionRewardEnv`       action dependence: one fixed observation, reward 1 for one
                               action and 0 for the others, one step: ``Q(a)`` is 1 or 0
                               and the greedy action is the rewarded one. Failing here
                               points at how actions index the Q-values (gather, offsets).
:class:`ContinuousActionEnv`   the same for a Box action (DDPG, TD3 critics and actors):
                               reward ``-sum((a - target)^2)``, one step, so
                               ``Q(a) = -sum((a - target)^2)`` and the optimum is ``target``.
:class:`TruncatedRewardEnv`    bootstrapping at a time limit: constant observation, reward
                               1 every step, never terminated but truncated after
                               ``max_steps`` steps, so ``V = Q = 1 / (1 - gamma)``. A
                               learner that treats the cut as the end of the task finds
                               less (the observation does not tell how much time is left).
=============================  ==========================================================

In the first three probes the reward does not depend on the action, so their values hold
for every policy (a PPO critic must find them whatever its actor does); the last two give
the values of the optimal policy (``V``) and of every action (``Q``).

Every probe exposes its answers rather than leaving them to the tests: the observations
whose values are known (:meth:`ProbeEnv.probe_observations`), ``V`` of each
(:meth:`ProbeEnv.expected_values`) and ``Q`` of each against a batch of actions
(:meth:`ProbeEnv.expected_q_values`). Episodes *terminate*, so nothing is to be
bootstrapped past their end, except in :class:`TruncatedRewardEnv`, whose episodes are only
ever truncated and must be bootstrapped. Resets are seeded through ``np_random`` and
each probe passes ``gymnasium.utils.env_checker.check_env``.

This module imports only gymnasium and numpy.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

#: Observation space of every probe: one float, the probes' observations lie in [-1, 1].
OBSERVATION_SPACE = spaces.Box(-1.0, 1.0, (1,), np.float32)


def action_space_of(continuous: bool, n: int = 2) -> spaces.Space:
    """The action space of a probe whose reward ignores the action: ``Discrete(n)``, or a
    one-dimensional ``Box`` in [-1, 1] when ``continuous``."""
    if continuous:
        return spaces.Box(-1.0, 1.0, (1,), np.float32)
    return spaces.Discrete(n)


def _obs(value: float) -> np.ndarray:
    return np.array([value], dtype=np.float32)


class ProbeEnv(gym.Env):
    """What every probe shares: the observation space, seeded resets and the known answers.

    A subclass sets :attr:`isolates` and implements :meth:`_first_obs`, :meth:`_step` and
    :meth:`_q`; the answers are derived from ``_q`` so that ``V`` and ``Q`` cannot disagree.
    With :attr:`max_steps` set, an episode that has not terminated by then is truncated.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # gymnasium's Env declares it so
    #: What a failure on this probe points at (module docstring).
    isolates: ClassVar[str] = ""
    max_steps: int | None = None

    def __init__(self, action_space: spaces.Space) -> None:
        self.observation_space = OBSERVATION_SPACE
        self.action_space = action_space
        self._state = _obs(0.0)
        self._t = 0

    # -- the Gymnasium API ----------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._t = 0
        self._state = self._first_obs()
        return self._state.copy(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        reward, next_state, terminated = self._step(self._state, action)
        self._t += 1
        self._state = next_state
        truncated = not terminated and self.max_steps is not None and self._t >= self.max_steps
        return next_state.copy(), float(reward), terminated, truncated, {}

    # -- the dynamics, per probe ----------------------------------------------------------
    def _first_obs(self) -> np.ndarray:
        return _obs(0.0)

    def _step(self, state: np.ndarray, action: Any) -> tuple[float, np.ndarray, bool]:
        """``(reward, next observation, terminated)`` of ``action`` in ``state``."""
        raise NotImplementedError

    def _q(self, state: np.ndarray, actions: np.ndarray, gamma: float) -> np.ndarray:
        """``Q(state, a)`` of each action of the batch ``actions``."""
        raise NotImplementedError

    # -- the known answers ----------------------------------------------------------------
    def probe_observations(self) -> np.ndarray:
        """``(n, 1)`` batch of the observations whose values are known."""
        return np.stack([_obs(0.0)])

    def _actions(self, actions: Any) -> np.ndarray:
        if actions is not None:
            return np.asarray(actions)
        if isinstance(self.action_space, spaces.Discrete):
            start = int(self.action_space.start)
            return np.arange(start, start + int(self.action_space.n))
        raise ValueError(
            f"{type(self).__name__}.expected_q_values needs the actions to evaluate for a "
            f"{type(self.action_space).__name__} action space"
        )

    def expected_q_values(self, gamma: float, actions: Any = None) -> np.ndarray:
        """``(n_observations, n_actions)``: ``Q`` of each probe observation and each action
        of the batch ``actions`` (default: every action of a Discrete space, in order)."""
        batch = self._actions(actions)
        return np.stack([self._q(s, batch, gamma) for s in self.probe_observations()])

    def expected_values(self, gamma: float) -> np.ndarray:
        """``(n_observations,)``: ``V`` of each probe observation under the optimal policy
        (under every policy when the reward ignores the action)."""
        return np.array([self._optimal_value(s, gamma) for s in self.probe_observations()])

    def _optimal_value(self, state: np.ndarray, gamma: float) -> float:
        return float(self._q(state, self._actions(None), gamma).max())


class _ActionFree(ProbeEnv):
    """A probe whose reward ignores the action: ``Discrete(2)`` or a Box action."""

    def __init__(self, continuous: bool = False) -> None:
        super().__init__(action_space_of(continuous))

    def _value(self, state: np.ndarray, gamma: float) -> float:
        raise NotImplementedError

    def _q(self, state: np.ndarray, actions: np.ndarray, gamma: float) -> np.ndarray:
        return np.full(len(actions), self._value(state, gamma))

    def _optimal_value(self, state: np.ndarray, gamma: float) -> float:
        return self._value(state, gamma)  # whatever the action space, no action to pick


class ConstantRewardEnv(_ActionFree):
    """Probe 1: constant observation 0, reward 1, one step. ``V = Q = 1``."""

    isolates = "value learning: loss, optimiser, terminal handling"

    def _step(self, state, action):
        return 1.0, _obs(0.0), True

    def _value(self, state, gamma):
        return 1.0


class ObservationRewardEnv(_ActionFree):
    """Probe 2: observation -1 or +1 (uniformly at random, from the seeded ``np_random``),
    reward equal to it, one step. ``V(obs) = Q(obs, a) = obs``."""

    isolates = "observation dependence: preprocessing and batching of observations"

    def _first_obs(self):
        return _obs(float(self.np_random.choice([-1.0, 1.0])))

    def _step(self, state, action):
        return float(state[0]), state, True

    def probe_observations(self):
        return np.stack([_obs(-1.0), _obs(1.0)])

    def _value(self, state, gamma):
        return float(state[0])


class DiscountedRewardEnv(_ActionFree):
    """Probe 3: observation 0 (reward 0), then observation 1 (reward 1, terminated).
    ``V(0) = gamma`` and ``V(1) = 1``."""

    isolates = "discounting and bootstrapping: gamma, next observations, target networks"

    def _step(self, state, action):
        if state[0] == 0.0:
            return 0.0, _obs(1.0), False
        return 1.0, _obs(1.0), True

    def probe_observations(self):
        return np.stack([_obs(0.0), _obs(1.0)])

    def _value(self, state, gamma):
        return 1.0 if state[0] == 1.0 else gamma


class ActionRewardEnv(ProbeEnv):
    """Probe 4: fixed observation 0, ``Discrete(n)`` actions, reward 1 for
    :attr:`rewarded_action` and 0 for the others, one step. ``Q(a) = [a == rewarded]``
    and ``V = 1``; the greedy action must be the rewarded one."""

    isolates = "action dependence: how actions index the Q-values"

    def __init__(self, n: int = 2, rewarded_action: int = 1) -> None:
        if not 0 <= rewarded_action < n:
            raise ValueError(f"rewarded_action must lie in [0, {n}), got {rewarded_action!r}")
        super().__init__(spaces.Discrete(n))
        self.rewarded_action = int(rewarded_action)

    def _step(self, state, action):
        return float(int(action) == self.rewarded_action), _obs(0.0), True

    def _q(self, state, actions, gamma):
        return (actions.reshape(len(actions)) == self.rewarded_action).astype(np.float64)


class ContinuousActionEnv(ProbeEnv):
    """Probe 5: fixed observation 0, a Box action in [-1, 1]^dim, reward
    ``-sum((a - target)^2)``, one step. ``Q(a) = -sum((a - target)^2)``; the optimal
    action is :attr:`target` and ``V = 0``."""

    isolates = "continuous action dependence: critic on actions, actor towards the optimum"

    def __init__(self, target: Any = 0.5, dim: int = 1) -> None:
        space = spaces.Box(-1.0, 1.0, (dim,), np.float32)
        self.target = np.broadcast_to(np.asarray(target, np.float32), (dim,)).copy()
        if not space.contains(self.target):
            raise ValueError(f"target must lie in [-1, 1]^{dim}, got {target!r}")
        super().__init__(space)

    def _step(self, state, action):
        error = np.asarray(action, np.float64).reshape(self.target.shape) - self.target
        return -float(np.sum(error**2)), _obs(0.0), True

    def _q(self, state, actions, gamma):
        batch = actions.reshape(-1, *self.target.shape).astype(np.float64)
        return -np.sum((batch - self.target) ** 2, axis=-1)

    def _optimal_value(self, state, gamma):
        return 0.0  # at a = target


class TruncatedRewardEnv(_ActionFree):
    """Probe 6: constant observation 0, reward 1 every step; the episode never terminates
    and is truncated after ``max_steps`` steps. ``V = Q = 1 / (1 - gamma)``: the time limit
    cuts the episode, not the task, so the learner must bootstrap from the last observation."""

    isolates = "bootstrapping at truncation: a time limit is not a terminal state"

    def __init__(self, continuous: bool = False, max_steps: int = 2) -> None:
        if isinstance(max_steps, bool) or int(max_steps) != max_steps or max_steps < 1:
            raise ValueError(f"max_steps must be a positive integer, got {max_steps!r}")
        super().__init__(continuous)
        self.max_steps = int(max_steps)

    def _step(self, state, action):
        return 1.0, _obs(0.0), False

    def _value(self, state, gamma):
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"TruncatedRewardEnv's values need gamma in [0, 1), got {gamma!r}")
        return 1.0 / (1.0 - gamma)


#: Every probe by a short name, for tests that sweep them.
PROBES: dict[str, type[ProbeEnv]] = {
    "constant_reward": ConstantRewardEnv,
    "observation_reward": ObservationRewardEnv,
    "discounted_reward": DiscountedRewardEnv,
    "action_reward": ActionRewardEnv,
    "continuous_action": ContinuousActionEnv,
    "truncated_reward": TruncatedRewardEnv,
}
