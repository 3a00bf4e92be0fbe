"""Hooks only some algorithms have live in mixins of their own, not as no-op methods of
every RLAlgorithm: epsilon-greedy exploration (DQN and its kin) and prioritised, n-step
learning (RainbowDQN)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from agilerl.algorithms import CQN, DDPG, DQN, PPO, RainbowDQN
from agilerl.algorithms.core.exploration import EpsilonGreedy, PrioritizedLearning
from agilerl.components.exploration import EpsilonSchedule

OBS = spaces.Box(-1.0, 1.0, (4,), np.float32)


def test_only_epsilon_greedy_algorithms_carry_the_epsilon_hooks():
    assert issubclass(DQN, EpsilonGreedy) and issubclass(CQN, EpsilonGreedy)
    for other in (PPO, DDPG):
        assert not issubclass(other, EpsilonGreedy)
        assert not hasattr(other, "configure_exploration")


def test_an_agent_explores_at_the_schedule_the_run_gives_it():
    agent = DQN(OBS, spaces.Discrete(2), seed=0)
    assert agent.epsilon == EpsilonSchedule().start  # the default until a run gives one
    agent.configure_exploration(EpsilonSchedule(start=0.0, end=0.0, decay=1.0))
    obs = np.zeros((8, 4), np.float32)
    greedy = agent.explore(obs)
    assert agent.exploration_metrics() == {"epsilon": 0.0}
    np.testing.assert_array_equal(greedy, agent.explore(obs))  # epsilon 0: always greedy


def test_only_rainbow_learns_from_priorities_and_n_steps():
    assert issubclass(RainbowDQN, PrioritizedLearning)
    assert RainbowDQN.learns_from_priorities and RainbowDQN.learns_n_step
    assert not issubclass(DQN, PrioritizedLearning)
    assert not hasattr(DQN, "learn_prioritized")
