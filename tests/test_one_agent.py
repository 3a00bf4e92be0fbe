"""One agent, one call (agilerl/one_agent.py): ``train_agent`` trains one agent from a
Gymnasium id, an environment object or a factory and returns it; its arguments are
checked as a manifest's are, each problem naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from agilerl.testing.probe_envs import ActionRewardEnv
from agilerl.training.errors import TrainerError


def test_train_agent_returns_one_trained_agent_from_an_id_or_an_environment():
    from agilerl import evaluate_agent, train_agent

    agent = train_agent("DQN", ActionRewardEnv, steps=2_000, lr=1e-3, verbose=False)
    assert agent.predict(np.zeros(1, np.float32), deterministic=True)[0] == 1
    env = ActionRewardEnv()
    result = evaluate_agent(agent, env, episodes=3)  # the object itself, left open
    assert result.returns == [1.0, 1.0, 1.0]
    env.reset(seed=0)
    named = train_agent("PPO", "CartPole-v1", steps=512, learn_step=128, verbose=False)
    assert named.observation_space.shape == (4,) and len(named.fitness) >= 1
    with pytest.raises(TrainerError, match=r"PPO hyperparameters: lr: "):
        train_agent("PPO", "CartPole-v1", lr=-1.0, verbose=False)


def test_an_unknown_algorithm_is_refused_with_the_closest_name():
    from agilerl import train_agent

    with pytest.raises(TrainerError, match=r"^algorithm: algorithm 'DQNN' is not registered "):
        train_agent("DQNN", "CartPole-v1", verbose=False)


def test_a_keyword_that_is_no_hyperparameter_of_the_algorithm_is_refused_naming_it():
    from agilerl import train_agent

    with pytest.raises(TrainerError) as err:
        train_agent("DQN", "CartPole-v1", learning_rate=0.1, verbose=False)
    assert str(err.value) == "DQN hyperparameters: learning_rate: Extra inputs are not permitted"


def test_a_budget_of_no_steps_is_refused_as_the_training_section_would_be():
    from agilerl import train_agent

    with pytest.raises(TrainerError, match=r"^training\.max_steps: "):
        train_agent("DQN", "CartPole-v1", steps=0, verbose=False)
