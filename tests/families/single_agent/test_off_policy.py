"""The off-policy turn, written once for P agents: what an agent alone (P = 1) may be.

A cohort (P > 1) runs the algorithm's population update on its stacked view; an agent
alone runs only the off-policy contract every algorithm states (``explore``, ``learn``),
so an algorithm without a population update (a user's) trains through the same turn."""

from __future__ import annotations

from typing import Any

import numpy as np

from agilerl.algorithms.dqn import DQN
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.off_policy import train_off_policy
from agilerl.models import GymEnvSpec

NET = {"latent_dim": 8, "encoder_config": {"hidden_size": [8]}, "head_config": {"hidden_size": [8]}}


class OwnStepDQN(DQN):
    """An algorithm on the off-policy contract only: its own ``learn`` (DQN's, counted),
    no population acting, and so no cohort: a subclass whose learning step is not its
    ``update`` says so (``learns_in_cohorts`` is inherited from DQN)."""

    learns_in_cohorts = False
    learned = 0  # on the class: clones made by the loop count too

    def act(self, view: Any, obs: Any, action_mask: Any, uniform: np.ndarray) -> np.ndarray:
        raise AssertionError("an agent alone acts through its own explore")

    def learn(self, batch: dict[str, Any]) -> dict[str, float]:
        type(self).learned += 1
        return super().learn(batch)


def test_an_agent_without_a_population_update_trains_alone_in_a_run_of_cohorts():
    OwnStepDQN.learned = 0
    spec = GymEnvSpec(name="CartPole-v1", num_envs=2, sync=True)
    env = make_vector_env(spec)
    pop = [
        OwnStepDQN(
            env.single_observation_space,
            env.single_action_space,
            net_config=NET,
            batch_size=16,
            learn_step=2,
            index=i,
            seed=i,
        )
        for i in range(2)
    ]
    memory = ReplayBuffer(1_000)
    pop, _ = train_off_policy(
        env, "CartPole-v1", "DQN", pop, memory, env_spec=spec, cohorts=True,
        max_steps=100, evo_steps=100, eval_steps=20, verbose=False,
    )  # fmt: skip
    # 50 vector steps each, learning every step from the 8th (16 rows): 43 rounds each
    assert OwnStepDQN.learned == 2 * 43
    assert [agent.steps for agent in pop] == [100, 100]
    assert len(memory) == 200  # both agents' rows, merged when the generation ended
