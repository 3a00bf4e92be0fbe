"""RainbowDQN in cohorts: noisy streams stacked with each agent's own noise, one step that
is each agent's own (its hyperparameters, batch size, importance weights), a new noise
sample from each learning agent's own generator, nothing for an agent not learning; and
the cohort's replay: each agent's priorities, draws, n-step sums and journals as its own
turn's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.rainbow_dqn import RainbowDQN
from agilerl.cohorts.learners import ReplayCohort, cohort_key
from agilerl.cohorts.replay import LockstepPrioritizedReplay, LockstepReplay
from agilerl.cohorts.stacking import StackedNetwork, stackable
from agilerl.components.n_step_replay import NStepReplayBuffer
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay import Replay
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.testing.transitions import random_transitions
from agilerl.training.sharing import ExperienceSharing

OBS = spaces.Box(-1.0, 1.0, (4,))
ACTIONS = spaces.Discrete(3)
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [12]},
}
SIZES = (8, 5, 8)  # agent 1's batches are padded to the cohort's 8


def rainbows(count=3, **kwargs):
    torch.manual_seed(0)  # the networks' initial weights and noise come from torch's generator
    return [
        RainbowDQN(
            OBS,
            ACTIONS,
            index=i,
            net_config=NET,
            seed=i,
            batch_size=SIZES[i],
            lr=1e-3 * (i + 1),
            gamma=0.9 + 0.03 * i,
            tau=0.01 * (i + 1),
            num_atoms=11,
            v_min=-5.0,
            v_max=5.0,
            **kwargs,
        )  # fmt: skip
        for i in range(count)
    ]


def batch(seed, rows=8):
    """A prioritised n-step batch: weights and the n-step transitions of the same rows."""
    g = torch.Generator().manual_seed(seed)
    one = random_transitions(rows, g)
    n_step = {**random_transitions(rows, g), "obs": one["obs"], "action": one["action"]}
    n_step["discount"] = 0.9 ** torch.randint(1, 4, (rows,), generator=g).float()
    return {**one, "n_step": n_step, "weights": torch.rand(rows, generator=g) + 0.1}


def own_rows(b, rows):
    return {k: own_rows(v, rows) if isinstance(v, dict) else v[:rows] for k, v in b.items()}


def flattened(batches):
    return {
        k: flattened([b[k] for b in batches]) if isinstance(batches[0][k], dict)
        else torch.cat([b[k] for b in batches])
        for k in batches[0]
    }  # fmt: skip


def noise(agent):
    return [b.clone() for name, b in agent.actor.named_buffers() if "epsilon" in name] + [
        b.clone() for name, b in agent.actor_target.named_buffers() if "epsilon" in name
    ]


def params(agent):
    return [
        p.detach().clone() for net in (agent.actor, agent.actor_target) for p in net.parameters()
    ]


def test_noisy_streams_stack_with_each_agents_noise_in_training_and_none_in_evaluation():
    agents = rainbows()
    assert stackable(agents[0].actor)
    stacked = StackedNetwork([a.actor for a in agents])
    obs = torch.rand(3 * 5, 4) * 2 - 1
    blocks = obs.reshape(3, 5, 4)
    with torch.no_grad():
        noisy = stacked.network.dist(obs)
        expected = torch.cat([a.actor.dist(blocks[p]) for p, a in enumerate(agents)])
        torch.testing.assert_close(noisy, expected)
        stacked.network.eval()  # reaches the stacked streams: the mean layers
        mean = stacked.network.dist(obs)
        stacked.network.train()
        for a in agents:
            a.actor.eval()
        expected = torch.cat([a.actor.dist(blocks[p]) for p, a in enumerate(agents)])
    torch.testing.assert_close(mean, expected)
    assert not torch.allclose(mean, noisy)  # the noise was in the training-mode forward


def test_an_agents_new_noise_is_what_its_own_reset_draws_from_the_same_seed():
    agents = rainbows()
    stacked = StackedNetwork([a.actor for a in agents])
    before = [noise(a) for a in agents]
    stacked.reset_noise(1, torch.Generator().manual_seed(11))
    stacked.write_back([a.actor for a in agents])
    twin = rainbows()[1]
    torch.manual_seed(11)
    twin.actor.reset_noise()
    assert all(torch.equal(x, y) for x, y in zip(noise(agents[1]), noise(twin), strict=True))
    for p in (0, 2):
        assert all(torch.equal(x, y) for x, y in zip(noise(agents[p]), before[p], strict=True))


@pytest.mark.parametrize("combined", [False, True])
def test_a_cohort_step_is_each_agents_own_step_and_its_new_noise(combined):
    alone, together = rainbows(combined_reward=combined), rainbows(combined_reward=combined)
    cohort = ReplayCohort(together)
    for round_ in range(2):
        batches = [batch(10 * round_ + p) for p in range(3)]
        expected = []
        for p, agent in enumerate(alone):
            torch.manual_seed(100 * round_ + p)  # its own turn's stream draws its noise
            expected.append(agent.learn_prioritized(own_rows(batches[p], SIZES[p])))
        generators = [torch.Generator().manual_seed(100 * round_ + p) for p in range(3)]
        got, losses = cohort.learn_prioritized(flattened(batches), np.ones(3, bool), generators)
        for p, (metrics, own) in enumerate(expected):
            assert got[p] is not None and got[p].keys() == metrics.keys()
            assert got[p]["loss"] == pytest.approx(metrics["loss"], rel=1e-5)
            torch.testing.assert_close(losses[8 * p : 8 * p + SIZES[p]], own)
    cohort.write_back()
    for mine, theirs in zip(together, alone, strict=True):
        for x, y in zip(params(mine), params(theirs), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)
        # the same draws from the same seeds: the noise is bit-equal
        assert all(torch.equal(x, y) for x, y in zip(noise(mine), noise(theirs), strict=True))


def test_an_agent_not_learning_keeps_weights_moments_and_noise_bit_equal():
    together = rainbows()
    cohort = ReplayCohort(together)
    generators = [torch.Generator().manual_seed(p) for p in range(3)]
    cohort.learn_prioritized(flattened([batch(p) for p in range(3)]), np.ones(3, bool), generators)
    cohort.write_back()
    before = (
        params(together[1]),
        noise(together[1]),
        copy.deepcopy(together[1].optimizer.state_dict()),
    )
    cohort = ReplayCohort(together)
    figures, _ = cohort.learn_prioritized(
        flattened([batch(p) for p in range(3, 6)]), np.array([True, False, True]), generators
    )
    cohort.write_back()
    assert figures[1] is None and figures[0] is not None and figures[2] is not None
    after = (params(together[1]), noise(together[1]), together[1].optimizer.state_dict())
    assert all(torch.equal(x, y) for x, y in zip(before[0], after[0], strict=True))
    assert all(torch.equal(x, y) for x, y in zip(before[1], after[1], strict=True))
    for key, state in before[2]["state"].items():
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(state[name], after[2]["state"][key][name])


def test_rainbow_agents_form_their_own_cohort_by_combined_reward():
    plain, combined = rainbows(1)[0], rainbows(1, combined_reward=True)[0]
    other_noise = rainbows(2)[1]  # another noise sample and weights: the same cohort
    assert cohort_key(plain) == cohort_key(other_noise)
    assert cohort_key(plain) != cohort_key(combined)


# -- the cohort's replay ----------------------------------------------------------------
N = 2  # environments per agent
STEPS = 14


def step(p, t):
    """Agent ``p``'s vector step ``t``: rows that say who wrote them and when, episodes
    ending (terminated or truncated) at steps that differ by agent and environment."""
    obs = np.stack([np.full(N, p, np.float32), np.full(N, t, np.float32)], 1)
    obs[:, 1] += np.arange(N) / 10
    action = np.full(N, (t + p) % 3, np.int64)
    reward = np.full(N, 0.5 * t - p, np.float64)
    terminated = np.array([(t + p) % 5 == 4, False])
    truncated = np.array([False, (t + 2 * p) % 6 == 5])
    return obs, action, reward, obs + 1, terminated, truncated


def filled(per, max_size):
    memory = PrioritizedReplayBuffer(max_size, alpha=0.6) if per else ReplayBuffer(max_size)
    n_step = NStepReplayBuffer(max_size, n_step=3, gamma=0.9)
    replay = Replay.of(memory, n_step)
    for t in range(7):
        replay.add(*step(-1, t))
    replay.end_turn()
    if per:  # priorities that are not all the same
        memory.update_priorities(np.arange(len(memory)), np.linspace(0.1, 2.0, len(memory)))
    return memory, n_step


class Agent:
    """What the replay reads of an agent, and a loss of every row fixed by the row."""

    learns_n_step = True
    learns_from_priorities = True
    gamma = 0.9
    prior_eps = 1e-3

    def __init__(self, p):
        self.batch_size = SIZES[p]
        self.beta = 0.3 + 0.1 * p
        self.steps = 0
        self.seen = []

    @staticmethod
    def losses(b):
        return b["obs"][:, 1].double() * 0.3 + b["n_step"]["reward"].double() * 0.01

    def learn_prioritized(self, b):
        self.seen.append(b)
        return {"loss": 0.0}, self.losses(b)

    def learn(self, b):  # from a uniform buffer
        return self.learn_prioritized(b)[0]


class Learner:
    def __init__(self, agents):
        self.agents = agents

    def learn_prioritized(self, b, mask, generators):
        rows = b["reward"].shape[0] // len(self.agents)
        figures = []
        for p, agent in enumerate(self.agents):
            if mask[p]:
                agent.seen.append(own_rows(flattened([own_rows_at(b, p, rows)]), SIZES[p]))
            figures.append({"loss": 0.0} if mask[p] else None)
        return figures, Agent.losses(b)

    def learn(self, b, mask, generators):  # from a uniform buffer
        return self.learn_prioritized(b, mask, generators)[0]


def own_rows_at(b, p, rows):
    return {
        k: own_rows_at(v, p, rows) if isinstance(v, dict) else v[p * rows : (p + 1) * rows]
        for k, v in b.items()
    }


def live_at(t):
    """Which agents learn at step ``t``: all, but agent 1 skips every third round."""
    return np.array([True, t % 3 != 0, True])


@pytest.mark.parametrize("per", [True, False], ids=["prioritised", "uniform"])
@pytest.mark.parametrize("max_size", [200, 30], ids=["room", "wrapping"])
def test_each_agent_draws_learns_and_journals_as_its_own_turn(per, max_size):
    """Three agents, n-step replay beside a prioritised (or uniform) buffer: every batch
    an agent learns from (rows, weights, n-step rows) and its journals of both buffers
    are what its own turn gives, with its own generator seeded as that turn seeds
    torch's."""
    alone, journals = [], []
    for p in range(3):
        memory, n_step = filled(per, max_size)
        sharing = ExperienceSharing(memory, n_step)
        sharing.begin_turn(p)
        replay = Replay.of(memory, n_step, max_steps=40)
        agent = Agent(p)
        torch.manual_seed(50 + p)
        for t in range(STEPS):
            replay.add(*step(p, t))
            agent.steps += N
            if live_at(t)[p]:  # from the first step: the n-step window still fills up
                replay.learn(agent)
        replay.end_turn()
        sharing.end_turn(p)
        alone.append(agent)
        journals.append(sharing.take()[p])
    memory, n_step = filled(per, max_size)
    agents = [Agent(p) for p in range(3)]
    lockstep = (LockstepPrioritizedReplay if per else LockstepReplay)(
        memory, n_step, agents, rows=STEPS * N, max_steps=40
    )
    generators = [torch.Generator().manual_seed(50 + p) for p in range(3)]
    for t in range(STEPS):
        parts = [step(p, t) for p in range(3)]
        lockstep.add(*(np.concatenate(field) for field in zip(*parts, strict=True)))
        for agent in agents:
            agent.steps += N
        lockstep.learn(Learner(agents), list(SIZES), generators, live_at(t))
    lockstep.end_turn()
    for mine, theirs in zip(agents, alone, strict=True):
        assert len(mine.seen) == len(theirs.seen) > 0
        for got, expected in zip(mine.seen, theirs.seen, strict=True):
            # the slots drawn show in the rows (each says who wrote it and when)
            expected = {k: v for k, v in expected.items() if k != "indices"}
            assert got.keys() == expected.keys()
            for key in expected:
                if isinstance(expected[key], dict):
                    for name in expected[key]:
                        assert torch.equal(got[key][name], expected[key][name]), (key, name)
                else:
                    assert torch.equal(got[key], expected[key]), key
    for got, expected in zip(lockstep.journals(), journals, strict=True):
        assert len(got) == len(expected) == 2  # the main buffer's, the n-step buffer's
        for mine, theirs in zip(got, expected, strict=True):
            assert mine.keys() == theirs.keys()
            assert mine["written"] == theirs["written"]
            for name in theirs["rows"]:
                assert torch.equal(mine["rows"][name], theirs["rows"][name]), name
            if per and "old_rows" in theirs:
                assert mine["max_priority"] == theirs["max_priority"]
                for name in ("slots", "priorities"):
                    np.testing.assert_array_equal(mine["old_rows"][name], theirs["old_rows"][name])
    assert len(memory) == 7 * N  # the shared buffers were only read
