"""PPO agents as a cohort: each agent's rollout is its own (its environment, its networks,
its discount), each agent's update is its own PPO update (its coefficients, its clip,
its target_kl), and an agent stopped by its target_kl is left exactly as it was."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from support.ppo_cohorts import NET, OWN

from agilerl.algorithms.core.population import Population
from agilerl.algorithms.ppo import PPO
from agilerl.cohorts.learners import cohort_key, form_cohorts
from agilerl.cohorts.policy import PolicyCohort
from agilerl.components import on_policy
from agilerl.components.observations import map_tree
from agilerl.families.single_agent.cohort_envs import JoinedEnvs
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models import GymEnvSpec


def envs(count, num_envs=2, name="CartPole-v1"):
    spec = GymEnvSpec(name=name, num_envs=num_envs, vectorize="sync")
    return [make_vector_env(spec) for _ in range(count)]


def agents(share_encoders=True, name="CartPole-v1", **common):
    torch.manual_seed(0)
    settings = {"batch_size": 16, "learn_step": 32, "num_envs": 2}
    return [
        PPO(
            *spaces(name),
            index=i,
            net_config=NET,
            seed=i,
            share_encoders=share_encoders,
            **{**settings, "update_epochs": 2, **own, **common},
        )  # fmt: skip
        for i, own in enumerate(OWN)
    ]


def spaces(name="CartPole-v1"):
    env = envs(1, name=name)[0]
    try:
        return env.single_observation_space, env.single_action_space
    finally:
        env.close()


def cohort_with_rollouts(population, name="CartPole-v1"):
    """``population`` as a cohort that collected one rollout on its agents' own envs
    joined (agent ``p``'s reset with seed ``p``)."""
    cohort = PolicyCohort(population)
    joined = JoinedEnvs(envs(len(population), name=name))
    obs, info = joined.reset_each(list(range(len(population))))
    torch.manual_seed(100)
    cohort.collect_rollouts(joined, obs, info)
    joined.close()
    return cohort


def own_rollout(cohort, p, agent):
    """Agent ``p``'s block of the cohort's rollout, as ``agent``'s own rollout buffer
    would hold it (its ``n`` columns, advantages included)."""
    joint = cohort.buffer
    n = joint.num_envs // len(cohort.agents)
    block = slice(p * n, (p + 1) * n)
    agent.num_envs = n
    own = agent._ensure_buffer()
    own.reset()
    for name in ("actions", "rewards", "dones", "values", "log_probs", "advantages", "returns"):
        getattr(own, name).copy_(getattr(joint, name)[:, block])
    map_tree(lambda mine, theirs: mine.copy_(theirs[:, block]), own.obs, joint.obs)
    own.pos, own.ready = joint.pos, joint.ready
    return own


@pytest.mark.parametrize(
    ("share_encoders", "name"),
    [(True, "CartPole-v1"), (False, "CartPole-v1"), (True, "Pendulum-v1")],
)
def test_a_cohort_update_is_each_agents_own_ppo_update(share_encoders, name):
    """Discrete actions, and Box actions (each agent's own learnt log_std). Each agent
    alone learns from its block of the cohort's rollout, numbered as its own buffer
    numbers it, so its minibatches are the cohort's rows of it."""
    together = agents(share_encoders, name, target_kl=0.02)
    together[1].target_kl = 1e-4  # stops early, on its own
    cohort = cohort_with_rollouts(together, name)
    alone = copy.deepcopy(together)
    expected = []
    for p, agent in enumerate(alone):
        own_rollout(cohort, p, agent)
        torch.manual_seed(7 + p)  # its own turn's stream: its minibatch orders
        expected.append(agent.learn())
    got = cohort.learn([torch.Generator().manual_seed(7 + p) for p in range(3)])
    cohort.write_back()
    assert expected[1]["early_stop"] == 1.0 and expected[0]["early_stop"] == 0.0
    for e, g in zip(expected, got, strict=True):
        assert g.keys() == e.keys()
        for name in e:
            assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), name
    for a, b in zip(alone, together, strict=True):
        for x, y in zip(a.network_parameters(), b.network_parameters(), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
        sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
        assert sa.keys() == sb.keys()
        for key in sa:
            assert float(sa[key]["step"]) == float(sb[key]["step"])
            torch.testing.assert_close(sa[key]["exp_avg"], sb[key]["exp_avg"], rtol=1e-4, atol=1e-6)
        if share_encoders:
            assert b.critic.encoder is b.actor.encoder  # still shared after write-back


def test_an_agent_stopped_by_its_target_kl_or_its_epochs_is_left_bit_equal():
    together = agents()
    together[1].target_kl = 0.0  # a fresh rollout's first KL is 0: one step, then stopped
    cohort = cohort_with_rollouts(together)
    adam = cohort.view.optimizers["optimizer"]
    seen = []  # every agent's weights and moments after every step of the cohort

    def snapshot():
        tensors = adam.params + adam.exp_avg + adam.exp_avg_sq
        seen.append([[t[p].detach().clone() for t in tensors] for p in range(3)])

    real = adam.step
    adam.step = lambda grads, mask, used=None: (real(grads, mask, used), snapshot())
    figures = cohort.learn([torch.Generator().manual_seed(p) for p in range(3)])
    # 32 samples in minibatches of 16: agent 0 two epochs, agent 2 three
    assert [f["updates"] for f in figures] == [4.0, 1.0, 6.0] and len(seen) == 6
    assert [f["early_stop"] for f in figures] == [0.0, 1.0, 0.0]
    assert adam.steps.tolist() == [4.0, 1.0, 6.0]
    for p, last in ((0, 3), (1, 0)):  # from its last step on, nothing of it moves
        for later in seen[last + 1 :]:
            assert all(torch.equal(x, y) for x, y in zip(seen[last][p], later[p], strict=True))
    moved = [not torch.equal(a, b) for a, b in zip(seen[4][2], seen[5][2], strict=True)]
    assert any(moved)  # while the agent still learning moves


def test_each_agents_rollout_is_its_own():
    population = agents()
    own_envs = envs(3)
    joined = JoinedEnvs(own_envs)
    obs, info = joined.reset_each([10, 11, 12])
    cohort = PolicyCohort(population)
    torch.manual_seed(0)
    obs, info, _ = cohort.collect_rollouts(joined, obs, info)
    for p, agent in enumerate(population):
        # its steps are those of its own env, reset with its own seed (CartPole's first
        # episodes last longer than these four steps)
        stored = own_rollout(cohort, p, copy.deepcopy(agent)).samples()
        alone = envs(1)[0]
        seen, _ = alone.reset(seed=10 + p)
        for t in range(4):
            assert np.array_equal(stored.obs[2 * t : 2 * t + 2].numpy(), seen)
            seen, *_ = alone.step(stored.actions[2 * t : 2 * t + 2].numpy())
        alone.close()
    obs, _, _ = cohort.collect_rollouts(joined, obs, info)
    for p, agent in enumerate(population):
        buffer = own_rollout(cohort, p, copy.deepcopy(agent))
        every = buffer.samples()
        assert agent.num_envs == 2 and len(buffer) == 32
        # its values and log-probabilities are its own networks'
        with torch.no_grad():
            dist, value = agent._forward(every.obs)
            last = agent.values(Population.of(agent), obs[2 * p : 2 * p + 2])
        torch.testing.assert_close(every.values, value, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(
            every.log_probs, dist.log_prob(every.actions), rtol=1e-5, atol=1e-5
        )
        # its advantages are GAE with its own gamma and lambda
        n = buffer.pos
        advantages, _ = on_policy.advantages_and_returns(
            buffer.rewards[:n], buffer.values[:n], buffer.dones[:n], last,
            agent.gamma, agent.gae_lambda,
        )  # fmt: skip
        torch.testing.assert_close(buffer.advantages[:n], advantages, rtol=1e-5, atol=1e-5)
    for env in own_envs:
        env.close()


def test_ppo_agents_form_a_cohort_only_with_the_same_loop_shape():
    same = agents()
    longer = PPO(*spaces(), index=3, net_config=NET, batch_size=16, learn_step=64, num_envs=2,
                 update_epochs=2)  # fmt: skip
    recurrent = PPO(*spaces(), index=4, recurrent=True, batch_size=16, learn_step=32, num_envs=2,
                    update_epochs=2)  # fmt: skip
    population = dict(enumerate([*same, longer, recurrent]))
    assert cohort_key(recurrent) is None  # an LSTM does not stack
    assert form_cohorts(population) == [[0, 1, 2], [3], [4]]
