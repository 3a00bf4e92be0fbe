"""A cohort's environments: each agent's own env stepped as one joined vector env, infos
joined copy by copy, and the agents evaluated together as each is evaluated alone."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from agilerl.algorithms.ddpg import DDPG
from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.ppo import PPO
from agilerl.families.single_agent.cohort_envs import CohortEnvs, join_infos, lockstep_evaluation
from agilerl.families.single_agent.envs import make_vector_env
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


@pytest.mark.parametrize("case", CASES)
def test_a_cohort_is_evaluated_as_each_agent_alone(case):
    name, cls = CASES[case]
    spec = GymEnvSpec(name=name, num_envs=2, vectorize="sync")
    torch.manual_seed(0)
    agents = [cls(*spaces(spec), index=i, net_config=NET, seed=i) for i in range(3)]
    twins = copy.deepcopy(agents)
    state = RunState(seed=3, generation=2)
    envs = CohortEnvs(lambda: make_vector_env(spec))
    together = lockstep_evaluation(envs, eval_steps=60, eval_loop=2)(agents, [4, 5, 6], state)
    envs.close()
    env = make_vector_env(spec)
    alone = [
        episode_evaluation(env, 60, 2)(twin, slot, state)
        for twin, slot in zip(twins, [4, 5, 6], strict=True)
    ]
    env.close()
    for (fitness, steps), (own_fitness, own_steps), agent in zip(
        together, alone, agents, strict=True
    ):
        assert fitness == pytest.approx(own_fitness, rel=1e-5)
        assert steps == own_steps  # counted until its own episodes end (or the cut)
        assert agent.fitness[-1] == fitness and agent.eval_steps_taken == steps
    assert len({fitness for fitness, _ in together}) == 3  # each its own policy


def spaces(spec):
    env = make_vector_env(spec)
    try:
        return env.single_observation_space, env.single_action_space
    finally:
        env.close()
