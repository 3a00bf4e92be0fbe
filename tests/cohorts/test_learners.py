"""A cohort learns as its agents would one at a time: the same update for each agent
(its own hyperparameters, batch size and optimiser state), nothing for an agent not due
to learn, and cohorts formed only of agents that can share one."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.cqn import CQN
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.rainbow_dqn import RainbowDQN
from agilerl.cohorts.learners import ReplayCohort, can_join, cohort_key, form_cohorts
from agilerl.testing.transitions import random_transitions

OBS = spaces.Box(-1.0, 1.0, (4,))
ACTIONS = spaces.Discrete(3)
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16, 12]},
    "head_config": {"hidden_size": [16]},
}

#: The agents' generators, which these learners draw nothing from as they learn.
UNUSED: list[torch.Generator] = []


def agents(cls=DQN, count=3, **kwargs):
    torch.manual_seed(0)  # the networks' initial weights come from torch's generator
    kwargs.setdefault("batch_size", 8)  # the batches below
    made = []
    for i in range(count):
        agent = cls(OBS, ACTIONS, index=i, net_config=NET, seed=i, lr=1e-3 * (i + 1),
                    gamma=0.9 + 0.03 * i, tau=0.01 * (i + 1), **kwargs)  # fmt: skip
        made.append(agent)
    return made


def batch(rows, seed):
    return random_transitions(rows, torch.Generator().manual_seed(seed))


def flattened(batches, rows):
    return {k: torch.cat([b[k][:rows] for b in batches]) for k in batches[0]}


def state_of(agent):
    return (
        [p.detach().clone() for p in agent.actor.parameters()],
        [p.detach().clone() for p in agent.actor_target.parameters()],
        copy.deepcopy(agent.optimizer.state_dict()),
    )


@pytest.mark.parametrize("cls", [DQN, CQN])
def test_a_cohort_step_is_each_agents_own_step(cls):
    """Agent 1 learns from batches of 5: its block of the cohort's batch (8 rows, the
    largest) is its 5 rows and 3 of padding, which must not touch its update."""
    alone, together = agents(cls), agents(cls)
    alone[1].batch_size = together[1].batch_size = 5
    batches = [batch(8, seed) for seed in range(3)]
    own = [
        {k: v[: agent.batch_size] for k, v in b.items()}
        for agent, b in zip(alone, batches, strict=True)
    ]
    for step in range(3):  # the moments and step counts carry over between steps
        expected = [agent.learn(b) for agent, b in zip(alone, own, strict=True)]
        cohort = ReplayCohort(together)
        got = cohort.learn(flattened(batches, 8), np.ones(3, bool), UNUSED)
        cohort.write_back()
        for e, g in zip(expected, got, strict=True):
            assert g.keys() == e.keys()
            for name in e:
                assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), (step, name)
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a.actor.parameters(), b.actor.parameters(), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
        for x, y in zip(a.actor_target.parameters(), b.actor_target.parameters(), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
        sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
        for key in sa:
            assert float(sa[key]["step"]) == float(sb[key]["step"]) == 3.0
            torch.testing.assert_close(sa[key]["exp_avg"], sb[key]["exp_avg"], rtol=1e-4, atol=1e-6)


def test_an_agent_not_due_to_learn_is_left_bit_equal():
    together = agents()
    cohort = ReplayCohort(together)
    cohort.learn(flattened([batch(8, s) for s in range(3)], 8), np.ones(3, bool), UNUSED)
    cohort.write_back()
    before = state_of(together[1])
    cohort = ReplayCohort(together)
    figures = cohort.learn(
        flattened([batch(8, s) for s in range(3, 6)], 8), np.array([True, False, True]), UNUSED
    )
    cohort.write_back()
    assert figures[1] is None and figures[0] is not None
    after = state_of(together[1])
    for x, y in zip(before[0] + before[1], after[0] + after[1], strict=True):
        assert torch.equal(x, y)
    for key, entry in before[2]["state"].items():
        for name, value in entry.items():
            assert torch.equal(value, after[2]["state"][key][name]), name


def test_an_agent_that_never_learned_keeps_an_empty_optimiser_state():
    together = agents(count=2)
    cohort = ReplayCohort(together)
    cohort.learn(flattened([batch(8, 1), batch(8, 2)], 8), np.array([True, False]), UNUSED)
    cohort.write_back()
    assert together[1].optimizer.state_dict()["state"] == {}
    assert float(together[0].optimizer.state_dict()["state"][0]["step"]) == 1.0
    together[0].learn(batch(8, 3))  # torch's Adam goes on from the written state
    assert float(together[0].optimizer.state_dict()["state"][0]["step"]) == 2.0


def test_cohorts_group_agents_by_algorithm_and_architecture():
    dqns = agents(count=3)
    wider = {**NET, "encoder_config": {"hidden_size": [16, 20]}}  # as after add_node
    dqns[1] = DQN(OBS, ACTIONS, index=1, net_config=wider)
    rainbow = RainbowDQN(OBS, ACTIONS, index=9, net_config=NET)
    cqn = agents(CQN, count=1)[0]
    double = agents(count=1, double=True)[0]
    other_batch = agents(count=1, batch_size=64)[0]
    population = dict(enumerate([dqns[0], dqns[1], dqns[2], rainbow, cqn, double, other_batch]))
    # its own learner: never in a DQN cohort (exact classes), but stackable (noisy streams)
    assert cohort_key(rainbow) is not None and cohort_key(rainbow) != cohort_key(dqns[0])
    # another batch size joins (padded batches); another architecture or double does not
    assert form_cohorts(population) == [[0, 2, 6], [1], [3], [4], [5]]
    assert form_cohorts(population, enabled=False) == [[i] for i in range(7)]


def test_each_algorithm_declares_whether_it_learns_in_cohorts():
    import agilerl.algorithms

    cohorts = {name for name in agilerl.algorithms.NAMES
               if getattr(agilerl.algorithms, name).learns_in_cohorts}  # fmt: skip
    assert cohorts == {"DQN", "CQN", "RainbowDQN", "DDPG", "TD3", "PPO", "IPPO", "MADDPG", "MATD3"}

    class OwnStep(DQN):  # a learning step of its own, not its update on a view
        learns_in_cohorts = False

    own = OwnStep(OBS, ACTIONS, index=3, net_config=NET)
    dqn = agents(count=1)[0]
    assert can_join(dqn) and not can_join(own)  # the class decides, nothing else
    assert form_cohorts({0: dqn, 1: agents(count=1)[0], 2: own}) == [[0, 1], [2]]
