"""A cohort's environments: each agent's copies a block of one vector env (natively one
environment whose blocks draw their own agents' episodes; otherwise each agent's own env
stepped as one, infos joined copy by copy), and the agents evaluated together as each
is evaluated alone (the one evaluation of P agents, ``Scoring.evaluation``; an agent
alone's exactly as ``RLAlgorithm.test`` evaluates it)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.ppo import PPO
from agilerl.families.single_agent.cohort_envs import CohortEnvs, join_infos
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.scoring import Scoring
from agilerl.models import GymEnvSpec
from agilerl.training.evolution import episode_evaluation
from agilerl.training.state import RunState

NET = {
    "latent_dim": 16,
    "encoder_config": {"hidden_size": [16]},
    "head_config": {"hidden_size": [16]},
}
#: Environment and agents: discrete and continuous policies, greedy and deterministic.
CASES = {
    "DQN": ("CartPole-v1", DQN),
    "PPO": ("CartPole-v1", PPO),
    "PPO-Box": ("Pendulum-v1", PPO),
    "DDPG": ("Pendulum-v1", DDPG),
}


def test_joined_infos_keep_each_copys_entries_in_order():
    masks = {"action_mask": np.ones((2, 3), bool), "_action_mask": np.ones(2, bool)}
    final = {
        "final_obs": np.array([None, np.zeros(4)], dtype=object),
        "_final_obs": np.array([False, True]),
        "final_info": {"x": np.array([0, 7]), "_x": np.array([False, True])},
    }
    joined = join_infos([masks, final, {}], [2, 2, 1])
    assert joined["action_mask"].shape == (5, 3)
    assert joined["action_mask"][:2].all() and not joined["action_mask"][2:].any()
    assert joined["_action_mask"].tolist() == [True, True, False, False, False]
    assert joined["_final_obs"].tolist() == [False, False, False, True, False]
    assert list(joined["final_obs"][:3]) == [None, None, None] and joined["final_obs"][4] is None
    assert joined["final_info"]["x"].tolist() == [0, 0, 0, 7, 0]
    assert joined["final_info"]["_x"].tolist() == [False, False, False, True, False]


def test_native_blocks_step_as_each_agents_own_native_environment():
    """One native CartPole of 3 blocks of 4 copies, reset with a seed per block, gives
    each block exactly what 4 copies alone, reset with that seed, give: starts, rewards,
    flags, final observations and the restarts drawn after them, over many episodes."""
    spec = GymEnvSpec(name="CartPole-v1", num_envs=4)
    seeds = [11, 12, 13]
    cohort = CohortEnvs(spec)
    joined = cohort.take(3)
    assert joined.num_envs == 12 and cohort.take(3) is joined  # built once
    own = [make_vector_env(spec) for _ in seeds]
    obs, _ = joined.reset_each(seeds)
    starts = [env.reset(seed=seed)[0] for env, seed in zip(own, seeds, strict=True)]
    np.testing.assert_array_equal(obs, np.concatenate(starts))
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(400):
        actions = rng.integers(0, 2, size=12)
        step = joined.step(actions)
        alone = [env.step(actions[4 * b : 4 * b + 4]) for b, env in enumerate(own)]
        for field in range(4):
            np.testing.assert_array_equal(step[field], np.concatenate([a[field] for a in alone]))
        if "final_obs" in step[4]:
            for b, (*_, info) in enumerate(alone):
                mine = step[4]["final_obs"][4 * b : 4 * b + 4]
                theirs = info.get("final_obs", np.full(4, None, dtype=object))
                for x, y in zip(mine, theirs, strict=True):
                    assert (x is None and y is None) or np.array_equal(x, y)
        ended += int(np.logical_or(step[2], step[3]).sum())
    assert ended > 100  # the blocks restarted many episodes from their own generators
    cohort.close()
    assert cohort.built == {}
    with pytest.raises(ValueError, match="12 copies do not split into 5 equal blocks"):
        joined.reset_each([1, 2, 3, 4, 5])


def test_a_plain_reset_after_blocks_is_one_environment_again():
    spec = GymEnvSpec(name="CartPole-v1", num_envs=6)
    env, alone = make_vector_env(spec), make_vector_env(spec)
    env.reset_each([1, 2, 3])
    np.testing.assert_array_equal(env.reset(seed=5)[0], alone.reset(seed=5)[0])
    rng = np.random.default_rng(1)
    for _ in range(200):
        actions = rng.integers(0, 2, size=6)
        np.testing.assert_array_equal(env.step(actions)[0], alone.step(actions)[0])


#: Each case synchronously, and natively where its environment has a native one.
EVALUATED = [(case, "sync") for case in CASES] + [
    (case, "native") for case, (name, _) in CASES.items() if name == "CartPole-v1"
]


@pytest.mark.parametrize(("case", "vectorize"), EVALUATED)
def test_a_cohort_is_evaluated_as_each_agent_alone(case, vectorize):
    name, cls = CASES[case]
    spec = GymEnvSpec(name=name, num_envs=2, vectorize=vectorize)
    torch.manual_seed(0)
    agents = [cls(*spaces(spec), index=i, net_config=NET, seed=i) for i in range(3)]
    twins = copy.deepcopy(agents)
    state = RunState(seed=3, generation=2)
    env = make_vector_env(spec)
    envs = CohortEnvs(spec)
    evaluate = Scoring(env).evaluation(60, 2, envs)
    together = evaluate(agents, [4, 5, 6], state)
    envs.close()
    alone = [
        evaluate([twin], [slot], state)[0] for twin, slot in zip(twins, [4, 5, 6], strict=True)
    ]
    env.close()
    for (fitness, steps), (own_fitness, own_steps), agent in zip(
        together, alone, agents, strict=True
    ):
        assert fitness == pytest.approx(own_fitness, rel=1e-5)
        assert steps == own_steps  # counted until its own episodes end (or the cut)
        assert agent.fitness[-1] == fitness and agent.eval_steps_taken == steps
    assert len({fitness for fitness, _ in together}) == 3  # each its own policy


@pytest.mark.parametrize("case", [*CASES, "PPO-recurrent"])
def test_an_agent_alone_is_evaluated_exactly_as_its_test_evaluates_it(case):
    """On the run's env, with its own policy (a recurrent one from its hidden state):
    the same fitness, steps and cut to the bit as ``episode_evaluation``."""
    name, cls = CASES.get(case, ("CartPole-v1", PPO))
    settings = {"recurrent": True} if case == "PPO-recurrent" else {"net_config": NET}
    spec = GymEnvSpec(name=name, num_envs=2, vectorize="sync")
    torch.manual_seed(0)
    agent = cls(*spaces(spec), index=0, seed=0, **settings)
    twin = copy.deepcopy(agent)
    state = RunState(seed=3, generation=2)
    env = make_vector_env(spec)
    try:
        (got,) = Scoring(env).evaluation(60, 2)([agent], [4], state)
        expected = episode_evaluation(env, 60, 2)(twin, 4, state)
    finally:
        env.close()
    assert got == expected and agent.fitness == twin.fitness
    assert (agent.eval_steps_taken, agent.eval_cut) == (twin.eval_steps_taken, twin.eval_cut)


def spaces(spec):
    env = make_vector_env(spec)
    try:
        return env.single_observation_space, env.single_action_space
    finally:
        env.close()
