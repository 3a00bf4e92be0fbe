"""One update per algorithm, for any number of agents: the property every algorithm that
trains in cohorts holds. Its update, run on a stacked view of three agents with different
hyperparameters, gives each agent bit-for-bit what the same update gives it on a stacked
view of itself alone (metrics, weights, targets, optimiser state, counters, generators),
and leaves an agent outside the ``live`` mask untouched. (Against the agent's *own* step,
the plain path, a stacked step agrees to float rounding: other kernels; the tests beside
this one check that, and the training histories check the plain path is unchanged.)"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.neural_ts import NeuralTS
from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.algorithms.rainbow_dqn import RainbowDQN
from agilerl.algorithms.td3 import TD3
from agilerl.cohorts.views import StackedPopulation
from agilerl.testing.transitions import random_transitions

NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16, 12]},
    "head_config": {"hidden_size": [16]},
}
ROWS = 8
DISCRETE = (spaces.Box(-1.0, 1.0, (4,)), spaces.Discrete(3))
BOX = (spaces.Box(-1.0, 1.0, (3,)), spaces.Box(-2.0, 2.0, (2,)))
#: A bandit's contexts (one vector per arm) and its arms.
ARMS = (spaces.Box(-1.0, 1.0, (6,)), spaces.Discrete(3))

#: Each agent's own hyperparameters (three agents), per algorithm.
VALUE = {"lr": [1e-3, 3e-3, 5e-3], "gamma": [0.9, 0.95, 0.99], "tau": [0.01, 0.05, 0.1]}
ACTOR_CRITIC = {
    "gamma": [0.9, 0.95, 0.99],
    "tau": [0.01, 0.05, 0.1],
    "lr_actor": [1e-3, 3e-3, 5e-3],
    "lr_critic": [2e-3, 4e-3, 1e-2],
    "policy_freq": [1, 2, 3],
}
SIMBA = {
    "latent_dim": 16,
    "simba": True,
    "encoder_config": {"hidden_size": 16, "num_blocks": 2},
    "head_config": {"hidden_size": [16]},
}
# gamma (the exploration bonus's scale) within the schema's [0, 1].
BANDIT = {"lr": [1e-3, 3e-3, 5e-3], "reg": [0.0, 0.1, 0.5], "gamma": [0.25, 0.5, 1.0]}


def transitions(generator: torch.Generator) -> dict[str, torch.Tensor]:
    return random_transitions(ROWS, generator)


def continuous_transitions(generator: torch.Generator) -> dict[str, torch.Tensor]:
    return {
        "obs": torch.rand(ROWS, 3, generator=generator) * 2 - 1,
        "action": torch.rand(ROWS, 2, generator=generator) * 4 - 2,
        "reward": torch.randn(ROWS, generator=generator),
        "next_obs": torch.rand(ROWS, 3, generator=generator) * 2 - 1,
        "done": (torch.rand(ROWS, generator=generator) < 0.2).float(),
    }


def pulls(generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Pulled arms' contexts and their rewards (0 or 1)."""
    return {
        "context": torch.rand(ROWS, 6, generator=generator) * 2 - 1,
        "reward": (torch.rand(ROWS, generator=generator) < 0.5).float(),
    }


Batch = Callable[[torch.Generator], dict[str, torch.Tensor]]
#: Algorithm, its spaces, each agent's own hyperparameters (three agents), its batches.
CASES: dict[str, tuple[type, tuple[spaces.Space, spaces.Space], dict[str, list[Any]], Batch]] = {
    "DQN": (DQN, DISCRETE, VALUE, transitions),
    "DQN-SimBa": (DQN, DISCRETE, VALUE, transitions),
    "DDPG-SimBa": (DDPG, BOX, ACTOR_CRITIC, continuous_transitions),
    "CQN": (CQN, DISCRETE, {**VALUE, "alpha": [0.5, 1.0, 2.0]}, transitions),
    "RainbowDQN": (RainbowDQN, DISCRETE, VALUE, transitions),
    "DDPG": (DDPG, BOX, ACTOR_CRITIC, continuous_transitions),
    "TD3": (TD3, BOX, ACTOR_CRITIC, continuous_transitions),
    "NeuralUCB": (NeuralUCB, ARMS, BANDIT, pulls),
    "NeuralTS": (NeuralTS, ARMS, BANDIT, pulls),
}


def made(name: str) -> list[Any]:
    cls, (obs, actions), settings, _ = CASES[name]
    net = SIMBA if name.endswith("SimBa") else NET
    torch.manual_seed(0)  # the networks' initial weights come from torch's generator
    return [
        cls(
            obs,
            actions,
            index=i,
            net_config=net,
            seed=i,
            batch_size=ROWS,
            **{key: values[i] for key, values in settings.items()},
        )  # fmt: skip
        for i in range(3)
    ]


def batch_for(name: str, seed: int) -> dict[str, torch.Tensor]:
    return CASES[name][3](torch.Generator().manual_seed(seed))


def joined(batches: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {key: torch.cat([b[key] for b in batches]) for key in batches[0]}


def snapshot(agent: Any) -> dict[str, Any]:
    """Everything of an agent an update may change."""
    return {
        "weights": {
            name: [p.detach().clone() for p in getattr(agent, name).parameters()]
            for name in agent._network_attrs()
        },
        "buffers": {
            name: [b.detach().clone() for b in getattr(agent, name).buffers()]
            for name in agent._network_attrs()
        },
        "optimizers": {
            name: copy.deepcopy(getattr(agent, name).state_dict()) for name in agent.optimizer_specs
        },
        "learn_counter": getattr(agent, "learn_counter", None),
        "rng": agent.rng.bit_generator.state,
    }


def assert_same(a: Any, b: Any, where: str = "") -> None:
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def generators(seeds: list[int]) -> list[torch.Generator]:
    return [torch.Generator().manual_seed(100 + seed) for seed in seeds]


Masks = Callable[[int], np.ndarray]


@pytest.mark.parametrize("name", list(CASES))
def test_an_agents_update_does_not_depend_on_the_other_agents_of_its_view(name):
    together, alone = made(name), made(name)
    # Agent 1 sits out the second update: the masked case, inside the same property.
    masks = [np.array([True, True, True]), np.array([True, False, True])] * 2
    for step, live in enumerate(masks):
        batches = [batch_for(name, 10 * step + p) for p in range(3)]
        view = StackedPopulation(together)
        got = view.template.update(view, joined(batches), live, generators([step] * 3))
        view.write_back()
        for p, agent in enumerate(alone):
            before = snapshot(agent)
            if not live[p]:
                assert got[p] is None
                assert_same(snapshot(together[p]), before, f"{name} masked agent {p}")
                continue
            own = StackedPopulation([agent])
            expected = agent.update(own, batches[p], np.array([True]), generators([step]))
            own.write_back()
            assert got[p] == expected[0], (name, step, p)
            assert_same(snapshot(together[p]), snapshot(agent), f"{name} step {step} agent {p}")
    for agent in together:  # it did learn
        assert any(float(state["step"]) > 0 for state in agent_optimizer_states(agent))


def agent_optimizer_states(agent: Any) -> list[dict[str, Any]]:
    return [
        state
        for name in agent.optimizer_specs
        for state in getattr(agent, name).state_dict()["state"].values()
    ]


@pytest.mark.parametrize("name", ["DQN", "RainbowDQN", "DDPG"])
def test_the_view_of_one_acts_as_the_agent_itself(name):
    """``act`` on the view of one is the agent's own exploring (no forward of its own
    beside the agent's), so a population of one acts exactly as the agent alone."""
    from agilerl.algorithms.core.population import Population

    obs_space = CASES[name][1][0]
    obs = np.stack([obs_space.sample() for _ in range(5)])
    ours, theirs = made(name)[0], made(name)[0]
    for _ in range(3):
        acted = ours.act(Population.of(ours), obs, None, np.zeros(1, dtype=bool))
        np.testing.assert_array_equal(acted, theirs.explore(obs))
    assert ours.rng.bit_generator.state == theirs.rng.bit_generator.state


def test_modules_declare_whether_they_run_stacked():
    """An MLP and SimBa network stack by their own forward; an LSTM declares it cannot,
    so a recurrent agent trains alone."""
    from agilerl.algorithms.ppo import PPO
    from agilerl.cohorts.learners import cohort_key
    from agilerl.modules.lstm import EvolvableLSTM
    from agilerl.modules.simba import EvolvableSimBa

    assert EvolvableSimBa.stackable and not EvolvableLSTM.stackable
    assert cohort_key(made("DQN-SimBa")[0]) is not None
    recurrent = PPO(
        spaces.Box(-1.0, 1.0, (4,)),
        spaces.Discrete(2),
        recurrent=True,
        net_config={"encoder_config": {"hidden_state_size": 8}},
    )
    assert isinstance(recurrent.actor.encoder, EvolvableLSTM)
    assert cohort_key(recurrent) is None


def test_a_stacked_simba_network_is_each_agents_own_network():
    agents = made("DQN-SimBa")
    view = StackedPopulation(agents)
    obs = torch.rand(3 * 5, 4, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        stacked = view.net("actor")(obs)
        own = torch.cat([agent.actor(obs[5 * p : 5 * (p + 1)]) for p, agent in enumerate(agents)])
    torch.testing.assert_close(stacked, own, rtol=1e-5, atol=1e-6)
    assert not torch.equal(own[:5], own[5:10])  # three networks, not one
