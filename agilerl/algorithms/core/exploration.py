"""Hooks only some single-agent algorithms have, as mixins of their own rather than
no-op methods of :class:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm`:

* :class:`EpsilonGreedy`: exploration at the run's epsilon schedule (DQN, CQN); the
  off-policy turn gives its schedule to the agents that are one;
* :class:`PrioritizedLearning`: learning from n-step and prioritised replay (RainbowDQN);
  the replay (:mod:`agilerl.components.replay`) serves those batches only to such agents.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from agilerl.components.exploration import EpsilonSchedule


class EpsilonGreedy:
    """An agent exploring epsilon-greedily: acting at random with probability epsilon.

    The schedule is the run's (the training spec's ``eps_*``), given to every such agent
    before it trains by :meth:`configure_exploration`; the agent keeps the epsilon its last
    exploratory step used, reported as ``epsilon``."""

    #: The run's schedule, and the epsilon the last exploratory step used.
    epsilon_schedule: EpsilonSchedule
    epsilon: float

    def init_exploration(self) -> None:
        """The default schedule until the run gives its own (an agent used outside a run)."""
        self.epsilon_schedule = EpsilonSchedule()
        self.epsilon = self.epsilon_schedule.start

    def configure_exploration(self, schedule: EpsilonSchedule) -> None:
        """The run's epsilon-greedy schedule (the training spec's ``eps_*``)."""
        self.epsilon_schedule = schedule

    def exploration_metrics(self) -> dict[str, float]:
        return {"epsilon": self.epsilon}


class PrioritizedLearning:
    """An agent learning from n-step transitions (batches carrying them under
    ``"n_step"``) and from prioritised replay: :meth:`learn_prioritized` returns the loss
    of every transition, the new priorities of the slots sampled."""

    learns_n_step: ClassVar[bool] = True
    learns_from_priorities: ClassVar[bool] = True

    def learn_prioritized(self, batch: dict[str, Any]) -> tuple[dict[str, float], torch.Tensor]:
        """One learning step on a prioritised batch (importance-sampling ``weights``);
        returns the agent's ``learn_metrics`` and the per-transition losses."""
        raise NotImplementedError
