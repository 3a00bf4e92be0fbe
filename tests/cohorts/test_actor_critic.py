"""DDPG and TD3 agents learn as a cohort as they would one at a time: each agent's own
update (its gamma, tau, learning rates, policy_freq, smoothing noise, optimiser states),
nothing for an agent not due, and only the critics for an agent whose actor is not due."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from gymnasium import spaces

from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.td3 import TD3
from agilerl.cohorts.learners import ReplayCohort, cohort_key, form_cohorts

OBS = spaces.Box(-1.0, 1.0, (3,))
ACTIONS = spaces.Box(-2.0, 2.0, (2,))
NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
ROWS = 8

#: The agents' generators, which these learners draw nothing from as they learn.
UNUSED: list[torch.Generator] = []


def agents(cls=DDPG, count=3, share_encoders=False, **kwargs):
    torch.manual_seed(0)  # the networks' initial weights come from torch's generator
    kwargs.setdefault("batch_size", ROWS)  # the batches below
    settings = {
        "gamma": [0.9, 0.95, 0.99],
        "tau": [0.01, 0.05, 0.1],
        "lr_actor": [1e-3, 3e-3, 5e-3],
        "lr_critic": [2e-3, 4e-3, 1e-2],
        "policy_freq": [1, 2, 3],
    }
    made = []
    for i in range(count):
        own = {name: values[i] for name, values in settings.items()}
        agent = cls(OBS, ACTIONS, index=i, net_config=NET, seed=i,
                    share_encoders=share_encoders, **{**own, **kwargs})  # fmt: skip
        made.append(agent)
    return made


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.rand(ROWS, 3, generator=g) * 2 - 1,
        "action": torch.rand(ROWS, 2, generator=g) * 4 - 2,
        "reward": torch.randn(ROWS, generator=g),
        "next_obs": torch.rand(ROWS, 3, generator=g) * 2 - 1,
        "done": (torch.rand(ROWS, generator=g) < 0.2).float(),
    }


def flattened(batches):
    return {k: torch.cat([b[k] for b in batches]) for k in batches[0]}


def networks(agent):
    return [*agent.eval_networks, *agent.target_networks]


def snapshot(agent):
    """Every network's weights, both optimisers' states, the learn counter, the rng."""
    weights = {
        name: [p.detach().clone() for p in getattr(agent, name).parameters()]
        for name in networks(agent)
    }
    weights["actor.head"] = [p.detach().clone() for p in agent.actor.head.parameters()]
    return {
        "weights": weights,
        "actor_optimizer": copy.deepcopy(agent.actor_optimizer.state_dict()["state"]),
        "critic_optimizer": copy.deepcopy(agent.critic_optimizer.state_dict()["state"]),
        "learn_counter": agent.learn_counter,
        "rng": copy.deepcopy(agent.rng.bit_generator.state),
    }


def assert_bit_equal(before, after, parts):
    for part in parts:
        if part == "weights":
            for name, tensors in before["weights"].items():
                for x, y in zip(tensors, after["weights"][name], strict=True):
                    assert torch.equal(x, y), name
        elif part.endswith("optimizer"):
            assert before[part].keys() == after[part].keys(), part
            for key, entry in before[part].items():
                for name, value in entry.items():
                    assert torch.equal(value, after[part][key][name]), (part, name)
        else:
            assert before[part] == after[part], part


def assert_close_states(alone, together):
    for a, b in zip(alone, together, strict=True):
        assert a.learn_counter == b.learn_counter
        for name in networks(a):
            for x, y in zip(
                getattr(a, name).parameters(), getattr(b, name).parameters(), strict=True
            ):
                torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5, msg=name)
        for optimizer in ("actor_optimizer", "critic_optimizer"):
            sa = getattr(a, optimizer).state_dict()["state"]
            sb = getattr(b, optimizer).state_dict()["state"]
            assert sa.keys() == sb.keys(), optimizer
            for key in sa:
                assert float(sa[key]["step"]) == float(sb[key]["step"]), optimizer
                for moment in ("exp_avg", "exp_avg_sq"):
                    torch.testing.assert_close(
                        sa[key][moment], sb[key][moment], rtol=1e-4, atol=1e-6, msg=optimizer
                    )
        # the same smoothing noise drawn from each agent's own generator
        assert a.rng.bit_generator.state == b.rng.bit_generator.state


@pytest.mark.parametrize("share_encoders", [False, True])
@pytest.mark.parametrize("cls", [DDPG, TD3])
def test_a_cohort_step_is_each_agents_own_step(cls, share_encoders):
    """Agent 2 learns from batches of 5: its block of the cohort's batch (8 rows, the
    largest) is its 5 rows and 3 of padding, which must not touch its update."""
    alone = agents(cls, share_encoders=share_encoders)
    together = agents(cls, share_encoders=share_encoders)
    alone[2].batch_size = together[2].batch_size = 5
    # policy_freq 1, 2, 3: over six calls every agent updates its actor on its own calls
    actor_updates = [0, 0, 0]
    for step in range(6):
        batches = [batch(10 * step + p) for p in range(3)]
        own = [
            {k: v[: agent.batch_size] for k, v in b.items()}
            for agent, b in zip(alone, batches, strict=True)
        ]
        expected = [agent.learn(b) for agent, b in zip(alone, own, strict=True)]
        cohort = ReplayCohort(together)  # formed anew: state carries over write_back
        got = cohort.learn(flattened(batches), np.ones(3, bool), UNUSED)
        cohort.write_back()
        for p, (e, g) in enumerate(zip(expected, got, strict=True)):
            assert g is not None and g.keys() == e.keys(), (step, p)
            actor_updates[p] += "actor_loss" in e
            for name in e:
                assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), (step, p, name)
    assert actor_updates == [6, 3, 2]
    assert_close_states(alone, together)


def test_a_cohort_kept_across_calls_learns_as_one_formed_each_call():
    alone, together = agents(TD3), agents(TD3)
    cohort = ReplayCohort(together)
    for step in range(4):
        batches = [batch(10 * step + p) for p in range(3)]
        for agent, b in zip(alone, batches, strict=True):
            agent.learn(b)
        cohort.learn(flattened(batches), np.ones(3, bool), UNUSED)
    cohort.write_back()
    assert_close_states(alone, together)


@pytest.mark.parametrize("share_encoders", [False, True])
@pytest.mark.parametrize("cls", [DDPG, TD3])
def test_an_agent_not_due_to_learn_is_left_bit_equal(cls, share_encoders):
    together = agents(cls, share_encoders=share_encoders)
    cohort = ReplayCohort(together)
    cohort.learn(flattened([batch(p) for p in range(3)]), np.ones(3, bool), UNUSED)
    cohort.write_back()
    before = snapshot(together[1])
    cohort = ReplayCohort(together)
    figures = cohort.learn(
        flattened([batch(p) for p in range(3, 6)]), np.array([1, 0, 1], bool), UNUSED
    )
    cohort.write_back()
    assert figures[1] is None and figures[0] is not None and figures[2] is not None
    # weights, targets, both optimisers, the learn counter and the generator (no noise drawn)
    assert_bit_equal(before, snapshot(together[1]), list(before))


@pytest.mark.parametrize("share_encoders", [False, True])
@pytest.mark.parametrize("cls", [DDPG, TD3])
def test_an_agent_whose_actor_is_not_due_steps_only_its_critics(cls, share_encoders):
    together = agents(cls, share_encoders=share_encoders)  # policy_freq 1, 2, 3
    before = [snapshot(agent) for agent in together]
    cohort = ReplayCohort(together)
    figures = cohort.learn(flattened([batch(p) for p in range(3)]), np.ones(3, bool), UNUSED)
    cohort.write_back()
    after = [snapshot(agent) for agent in together]
    assert [("actor_loss" in f) for f in figures if f is not None] == [True, False, False]
    for p in (1, 2):
        assert after[p]["learn_counter"] == 1
        # the actor (less a shared encoder, which the critic loss trains), its optimiser
        # and every target as they were ...
        actor = "actor.head" if share_encoders else "actor"
        actor_side = {actor, *together[p].target_networks}
        assert_bit_equal(
            {**before[p], "weights": {n: before[p]["weights"][n] for n in actor_side}},
            {**after[p], "weights": {n: after[p]["weights"][n] for n in actor_side}},
            ["weights", "actor_optimizer"],
        )
        # ... while the critics stepped (a shared encoder with them)
        for name in together[p].critics:
            assert not torch.equal(before[p]["weights"][name][-1], after[p]["weights"][name][-1])
        encoder_moved = not torch.equal(
            before[p]["weights"]["actor"][0], after[p]["weights"]["actor"][0]
        )
        assert encoder_moved == share_encoders
        assert after[p]["critic_optimizer"] and not after[p]["actor_optimizer"]
    assert after[0]["actor_optimizer"]  # policy_freq 1: its actor stepped
    assert not torch.equal(before[0]["weights"]["actor"][-1], after[0]["weights"]["actor"][-1])


def test_exploring_in_a_cohort_is_each_agents_own_exploration():
    """Each agent explores (or, still warming up, draws uniform actions) as alone: the
    same actions, noise state and generator state, whichever agents of the cohort warm
    up at the step."""
    alone, together = agents(TD3), agents(TD3)
    cohort = ReplayCohort(together)
    for agent in [*alone, *together]:
        agent.episodes_ended(np.ones(2, dtype=bool))
    g = torch.Generator().manual_seed(3)
    for uniform in ([True, True, True], [True, False, True], [False, False, False]):
        obs = [(torch.rand(2, 3, generator=g) * 2 - 1).numpy() for _ in range(3)]
        expected = np.concatenate(
            [
                a.uniform_actions(o) if warming else a.explore(o)
                for a, o, warming in zip(alone, obs, uniform, strict=True)
            ]
        )
        got = cohort.explore(np.concatenate(obs), None, np.array(uniform))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(a.noise.state, b.noise.state)  # its own noise process
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
        assert "_policy" not in vars(b)  # nothing of the cohort is left in the agent


def test_cohorts_group_ddpg_and_td3_agents_by_what_their_code_needs_equal():
    assert DDPG.learns_in_cohorts and TD3.learns_in_cohorts
    ddpg, td3 = agents(DDPG, count=3), agents(TD3, count=2)
    shared = agents(TD3, count=1, share_encoders=True)[0]
    wider = DDPG(OBS, ACTIONS, index=7, net_config={**NET, "latent_dim": 20})
    other_bounds = DDPG(OBS, spaces.Box(-1.0, 1.0, (2,)), index=8, net_config=NET)
    other_batch = agents(DDPG, count=1, batch_size=64)[0]
    unclipped = agents(DDPG, count=1, max_grad_norm=None)[0]  # the stacked step's one clip
    population = dict(
        enumerate([ddpg[0], td3[0], ddpg[1], shared, wider, other_bounds, other_batch,
                   td3[1], ddpg[2], unclipped])
    )  # fmt: skip
    # per-agent hyperparameters (gamma, tau, learning rates, policy_freq) and batch sizes
    # (padded batches) do not split one
    assert form_cohorts(population) == [[0, 2, 6, 8], [1, 7], [3], [4], [5], [9]]
    assert cohort_key(ddpg[0]) != cohort_key(other_bounds)  # the actor's action bounds
