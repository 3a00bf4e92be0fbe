"""The on-policy turn trains a list of P agents. An agent alone (P = 1) trains exactly as
its own ``collect_rollouts`` and ``learn`` train it on the run's environment (torch's
global generator drawing its actions and its minibatch orders in turn): feed-forward,
recurrent (whose LSTMs never stack) and with running normalisation (which never
stacks). A cohort steps its copies, each agent's turn its own."""

from __future__ import annotations

import copy

import pytest
import torch

from agilerl.algorithms.ppo import PPO
from agilerl.families.single_agent.cohort_envs import CohortEnvs
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.on_policy import on_policy_turn
from agilerl.models import GymEnvSpec
from agilerl.training.state import RunState, reset_seed
from agilerl.training.tracking import MeanMetrics

NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
KINDS = {
    "feed-forward": ("Pendulum-v1", {"net_config": NET}),  # time-limit cuts bootstrap
    "recurrent": ("CartPole-v1", {"recurrent": True, "max_seq_len": 8}),
    "normalize": (
        "Pendulum-v1",
        {"net_config": NET, "normalize": {"observation": True, "reward": True}},
    ),
}
SPEC = {"num_envs": 4, "vectorize": "sync"}
BUDGET = 1_000  # 4 rollouts of 64 vector steps: Pendulum's 200-step episodes are cut


def ppo(env, index=0, **settings):
    torch.manual_seed(index)
    return PPO(
        env.single_observation_space,
        env.single_action_space,
        index=index,
        seed=index,
        batch_size=64,
        learn_step=256,
        num_envs=env.num_envs,
        update_epochs=2,
        **settings,
    )


def alone(agent, env, slot, run):
    """The turn an agent alone had before one turn served every P, as it was written."""
    torch.manual_seed(reset_seed(run, slot, 2))  # as the generation loop seeds a turn
    obs, info = env.reset(seed=reset_seed(run, slot, 0))
    agent.reset_rollouts()
    taken, completed, metrics = 0, [], MeanMetrics()
    while taken < BUDGET:
        obs, info, returns = agent.collect_rollouts(env, obs, info)
        metrics.add(agent.learn())
        taken += agent.rollout_steps
        completed.extend(returns)
    agent.steps += taken
    agent.scores.extend(completed)
    return taken, completed, metrics.means()


def same_state(a, b):
    for x, y in zip(a.network_parameters(), b.network_parameters(), strict=True):
        assert torch.equal(x, y)
    sa, sb = a.optimizer.state_dict()["state"], b.optimizer.state_dict()["state"]
    for key in sa:
        assert torch.equal(sa[key]["exp_avg"], sb[key]["exp_avg"])
        assert torch.equal(sa[key]["exp_avg_sq"], sb[key]["exp_avg_sq"])


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_alone_trains_as_its_own_collect_and_learn_bit_for_bit(kind):
    name, settings = KINDS[kind]
    env = make_vector_env(GymEnvSpec(name=name, **SPEC))
    run = RunState(seed=5, generation=3)
    try:
        agent = ppo(env, **settings)
        twin = copy.deepcopy(agent)
        expected = alone(twin, env, 2, run)
        torch.manual_seed(reset_seed(run, 2, 2))
        (got,) = on_policy_turn(env, None)([agent], [2], BUDGET, run)
    finally:
        env.close()
    assert got == expected  # steps, every episode's return, every metric's mean
    assert expected[1] and expected[2]["updates"] > 0  # episodes ended and it learnt
    assert agent.steps == twin.steps and agent.scores == twin.scores
    same_state(agent, twin)
    if kind == "normalize":  # the running statistics too
        own, theirs = agent.normalization.state_dict(), twin.normalization.state_dict()
        for key in ("observation", "reward"):
            assert torch.equal(own[key]["mean"], theirs[key]["mean"])
            assert torch.equal(own[key]["var"], theirs[key]["var"])
            assert own[key]["count"] == theirs[key]["count"] > 0


def test_a_cohorts_agents_each_train_on_their_own_copies():
    """Three agents of one cohort: each one's turn counts its own steps and episodes,
    and learns (its weights move, each its own way); the run's env is not stepped."""
    spec = GymEnvSpec(name="CartPole-v1", **SPEC)
    env = make_vector_env(spec)
    envs = CohortEnvs(spec)
    try:
        agents = [ppo(env, index=i, net_config=NET) for i in range(3)]
        before = copy.deepcopy(agents)
        torch.manual_seed(0)
        results = on_policy_turn(env, envs)(agents, [0, 1, 2], BUDGET, RunState(seed=5))
        assert envs.take(3).num_envs == 12
    finally:
        envs.close()
        env.close()
    for (taken, completed, metrics), agent, old in zip(results, agents, before, strict=True):
        assert taken == 1_024 and agent.steps == taken and agent.num_envs == 4
        assert completed and agent.scores == completed and metrics["updates"] > 0
        moved = [
            not torch.equal(x, y)
            for x, y in zip(agent.network_parameters(), old.network_parameters(), strict=True)
        ]
        assert all(moved)
    assert len({tuple(r[1]) for r in results}) == 3  # each its own episodes
