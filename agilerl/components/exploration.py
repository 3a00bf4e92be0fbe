"""The epsilon-greedy schedule of a training run.

Exploration belongs to the agent (:meth:`agilerl.algorithms.core.rl_algorithm.RLAlgorithm.explore`);
what the *run* decides is only the epsilon schedule of the training spec (``eps_start``,
``eps_end``, ``eps_decay``), which the off-policy loop hands to every epsilon-greedy agent through
:meth:`~agilerl.algorithms.core.exploration.EpsilonGreedy.configure_exploration`. Agents
that explore otherwise (action noise, noisy networks) are not given it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The schedule's defaults (the training spec's ``null`` eps_* fields mean these).
EPS_START, EPS_END, EPS_DECAY = 1.0, 0.01, 0.999


@dataclass(frozen=True)
class EpsilonSchedule:
    """Epsilon decays multiplicatively once per vector step, from ``start`` to ``end``."""

    start: float = EPS_START
    end: float = EPS_END
    decay: float = EPS_DECAY

    def __post_init__(self) -> None:
        for name in ("start", "end"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"eps_{name} must lie in [0, 1], got {getattr(self, name)!r}")
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"eps_decay must lie in (0, 1], got {self.decay!r}")

    def at(self, steps: int, num_envs: int) -> float:
        """Epsilon after ``steps`` env steps of an agent acting in ``num_envs`` envs.

        A function of the step count (not a value decayed in place), so a resumed or
        cloned agent continues the schedule exactly from its ``steps``.
        """
        return max(self.end, self.start * self.decay ** (steps // num_envs))
