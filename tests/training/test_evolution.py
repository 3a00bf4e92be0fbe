"""The run's plumbing (issue 48): the trainer runs ``evolve`` with its family's turns
(``Family.turns``) and ``RunConfig.of`` (no keyword round trip through the spec layer);
the AgileRL-named training functions are façades over the same turns. Whether agents
share cohorts: tests/training/test_cohorting.py."""

from __future__ import annotations

import math

import pytest

from agilerl.components.replay import build_replay_buffers
from agilerl.families.context import RunContext
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models import DQNSpec, PPOSpec
from agilerl.models.base import AlgorithmBase
from agilerl.models.env import GymEnvSpec
from agilerl.models.training import ReplayBufferSpec, TrainingSpec
from agilerl.trainer import LocalTrainer
from agilerl.training.evolution import RunConfig

#: Two agents of one architecture, a short run.
PAIR = {"max_steps": 256, "evo_steps": 128, "pop_size": 2, "seed": 0, "eval_steps": 20}


# --- the trainer -----------------------------------------------------------------------


def test_the_trainer_reads_no_training_function_or_its_keywords(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the trainer runs evolve with the family's turns")

    monkeypatch.setattr(AlgorithmBase, "get_training_kwargs", refused)
    monkeypatch.setattr(AlgorithmBase, "get_training_fn", classmethod(refused))
    population, fitnesses = LocalTrainer("DQN", "CartPole-v1", PAIR).train(verbose=False)
    assert len(population) == len(fitnesses) == 2
    assert all(agent.steps >= PAIR["max_steps"] for agent in population)


def test_run_config_of_a_run_context_takes_the_training_section():
    training = TrainingSpec(max_steps=300, max_wall_seconds=9.0)
    ctx = RunContext(algorithm=DQNSpec(), environment=None, training=training)
    config = RunConfig.of(ctx, env_name="CartPole-v1", target=5.0, verbose=False)
    assert (config.max_steps, config.evo_steps) == (300, DQNSpec.default_evo_steps)
    assert (config.algo, config.env_name, config.target) == ("DQN", "CartPole-v1", 5.0)
    assert config.max_wall_seconds == 9.0 and not config.evolving


# --- the AgileRL-named façades ------------------------------------------------------------


@pytest.mark.parametrize("spec", [DQNSpec(batch_size=32), PPOSpec(learn_step=64)], ids=str)
def test_a_training_function_called_the_agilerl_way_trains_its_population(spec, formed):
    env_spec = GymEnvSpec(name="CartPole-v1", num_envs=2, sync=True)
    env = make_vector_env(env_spec)
    space = env.single_observation_space, env.single_action_space
    pop = [spec.build_algorithm(*space, index=i) for i in range(2)]
    memory = None
    if spec.off_policy:
        memory, _ = build_replay_buffers(ReplayBufferSpec(max_size=1_000), spec)
    training = TrainingSpec(eval_steps=20)
    kwargs = spec.get_training_kwargs(training=training, env_spec=env_spec, memory=memory)
    try:
        pop, fitnesses = type(spec).get_training_fn()(
            env, pop=pop, max_steps=256, evo_steps=128, verbose=False, **kwargs
        )
    finally:
        env.close()
    assert len(pop) == len(fitnesses) == 2 and all(math.isfinite(f) for f in fitnesses)
    assert all(agent.steps >= 256 for agent in pop)
    assert formed and all(groups == [[0, 1]] for groups in formed)  # env_spec: cohorts
