"""What an agent, a trainer and the registry print: what they are, never an address."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from agilerl.algorithms import DQN, MADDPG, PPO
from agilerl.families import FAMILIES
from agilerl.models import ALGO_REGISTRY
from agilerl.trainer import LocalTrainer
from agilerl.training.state import RunState

CARTPOLE_OBS = spaces.Box(-np.inf, np.inf, (4,), np.float32)  # its repr prints every bound


def test_a_single_agent_prints_its_spaces_progress_and_latest_fitness():
    agent = PPO(CARTPOLE_OBS, spaces.Discrete(2), index=3)
    assert repr(agent) == (
        "PPO(observation_space=Box(4,), action_space=Discrete(2), steps=0, fitness=[], "
        "device='cpu', index=3)"
    )
    agent.steps, agent.fitness = 20480, [9.5, 475.63]
    assert "steps=20480, fitness=[..., 475.6]," in repr(agent)  # the latest, the rest elided
    agent.fitness = [9.5]
    assert "fitness=[9.5]," in repr(agent)


def test_composite_spaces_print_by_their_parts():
    observation = spaces.Dict({"image": spaces.Box(0, 255, (3, 8, 8), np.uint8),
                               "speed": spaces.Box(-1, 1, (1,))})  # fmt: skip
    agent = DQN(observation, spaces.MultiDiscrete([2, 3]))
    assert repr(agent).startswith(
        "DQN(observation_space=Dict(image: Box(3, 8, 8), speed: Box(1,)), "
        "action_space=MultiDiscrete([2, 3]), steps=0,"
    )


def test_a_multi_agent_agent_prints_its_agents():
    box = spaces.Box(-1, 1, (3,))
    agent = MADDPG({"a_0": box, "b_0": box}, {"a_0": spaces.Discrete(2), "b_0": spaces.Discrete(2)})
    assert repr(agent) == (
        "MADDPG(agents=['a_0', 'b_0'], steps=0, fitness=[], device='cpu', index=0)"
    )


def test_a_trainer_prints_its_run_and_its_progress():
    trainer = LocalTrainer("PPO", "CartPole-v1", {"max_steps": 20_480, "pop_size": 4})
    assert repr(trainer) == (
        "LocalTrainer(algorithm='PPO', env='CartPole-v1', pop_size=4, max_steps=20480, "
        "hpo=False, device='cpu')"
    )
    trainer.state = RunState(steps=4096)
    assert repr(trainer).endswith("device='cpu', steps=4096)")


def test_the_registry_and_the_families_print_what_they_are():
    assert repr(ALGO_REGISTRY).startswith("AlgorithmRegistry(CISPO, CQN, DDPG, DPO, DQN, ")
    assert "object at 0x" not in repr(list(FAMILIES.values()))
