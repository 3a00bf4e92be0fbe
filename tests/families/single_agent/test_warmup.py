"""``training.warmup_actions: uniform``: an off-policy agent acts uniformly at random
(from its own generator, among the allowed actions) until its learning starts, the same
alone and in a cohort, and the families that cannot do it refuse it."""

from __future__ import annotations

import copy
from collections import defaultdict

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.td3 import TD3
from agilerl.trainer import LocalTrainer

NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
OBS = spaces.Box(-1.0, 1.0, (3,))


def test_continuous_warmup_actions_are_uniform_in_the_bounds_and_leave_the_noise_alone():
    bounds = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32))
    agent = TD3(OBS, bounds, net_config=NET, seed=0, O_U_noise=True)
    agent.episodes_ended(np.ones(4, dtype=bool))
    noise = agent.noise.state.copy()
    actions = agent.uniform_actions(np.zeros((20_000, 3), np.float32))
    assert actions.shape == (20_000, 2) and actions.dtype == np.float32
    assert (actions >= bounds.low).all() and (actions <= bounds.high).all()
    np.testing.assert_allclose(actions.mean(0), [0.0, 0.5], atol=0.03)
    # a uniform law's spread: (high - low) / sqrt(12)
    np.testing.assert_allclose(actions.std(0), [4 / 12**0.5, 1 / 12**0.5], rtol=0.03)
    np.testing.assert_array_equal(agent.noise.state, noise)  # the exploration state kept


def test_discrete_warmup_actions_are_uniform_among_the_allowed_ones():
    agent = DQN(OBS, spaces.Discrete(5), net_config=NET, seed=0)
    mask = np.array([1, 0, 1, 1, 0], dtype=np.int8)
    actions = agent.uniform_actions(np.zeros((3_000, 3), np.float32), mask)
    counts = np.bincount(actions, minlength=5)
    assert counts[[1, 4]].sum() == 0
    assert counts[[0, 2, 3]].min() > 900  # ~1,000 each


def test_warmup_actions_come_from_the_agents_own_generator():
    first, second = (DDPG(OBS, spaces.Box(-1, 1, (2,)), net_config=NET, seed=7) for _ in "ab")
    torch.manual_seed(0), np.random.seed(0)  # noqa: NPY002 - global state must not matter
    a = first.uniform_actions(np.zeros((5, 3)))
    torch.manual_seed(1), np.random.seed(1)  # noqa: NPY002
    np.testing.assert_array_equal(second.uniform_actions(np.zeros((5, 3))), a)


TD3_RUN = {
    "algorithm": {"name": "TD3", "batch_size": 32, "learn_step": 2},
    "environment": {"name": "Pendulum-v1", "num_envs": 2, "sync": True},
    "network": NET,
    "training": {
        "max_steps": 400,
        "evo_steps": 400,
        "pop_size": 2,
        "hpo": False,
        "eval_steps": 10,
        "seed": 3,
        "learning_delay": 150,
        "warmup_actions": "uniform",
    },
    "replay_buffer": {"max_size": 1_000},
}


def acted(monkeypatch, document):
    """Train ``document``; each agent's actions, in order, as (how it acted, actions)."""
    record: dict[int, list[tuple[str, np.ndarray]]] = defaultdict(list)
    for how in ("uniform_actions", "explore"):
        real = getattr(TD3, how)

        def recording(self, obs, mask=None, *computed, real=real, how=how, **given):
            actions = real(self, obs, mask, *computed, **given)
            record[self.index].append((how, actions.copy()))
            return actions

        monkeypatch.setattr(TD3, how, recording)
    trainer = LocalTrainer.from_manifest(copy.deepcopy(document))
    trainer.train(verbose=False)
    monkeypatch.undo()
    return record


@pytest.mark.parametrize("cohorts", [False, True])
def test_an_agent_acts_uniformly_until_its_learning_starts(monkeypatch, cohorts):
    document = copy.deepcopy(TD3_RUN)
    document["training"]["cohorts"] = cohorts
    record = acted(monkeypatch, document)
    for index in (0, 1):
        ways = [how for how, _ in record[index]]
        # Its view of the shared buffer (the generation's, empty, plus its own 2 rows a
        # step) holds more than learning_delay = 150 rows from its 76th step on.
        assert ways == ["uniform_actions"] * 76 + ["explore"] * 124, ways
        warmup = np.concatenate([a for how, a in record[index] if how == "uniform_actions"])
        assert warmup.std() > 0.9  # spread over [-2, 2] (uniform: 1.15)


def test_an_agents_warmup_is_the_same_alone_and_in_a_cohort(monkeypatch):
    runs = {}
    for cohorts in (False, True):
        document = copy.deepcopy(TD3_RUN)
        document["training"]["cohorts"] = cohorts
        runs[cohorts] = acted(monkeypatch, document)
    for index in (0, 1):
        alone, together = runs[False][index], runs[True][index]
        for (how, a), (how_too, b) in zip(alone[:80], together[:80], strict=True):
            assert how == how_too
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_policy_warmup_acts_with_the_agents_exploration_from_the_first_step(monkeypatch):
    document = copy.deepcopy(TD3_RUN)
    document["training"]["warmup_actions"] = "policy"
    record = acted(monkeypatch, document)
    assert {how for agent in record.values() for how, _ in agent} == {"explore"}
