"""Whether a run's agents train as cohorts (agilerl/training/cohorting.py): one predicate
over every fact of the run, asked by ``evolve`` (which groups the agents) and by the
pre-flight (which counts the cohorts' memory)."""

from __future__ import annotations

from dataclasses import replace

from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.testing.probe_envs import ActionRewardEnv
from agilerl.trainer import LocalTrainer
from agilerl.training.cohorting import Cohorting, trains_in_cohorts

#: Two agents of one architecture, a short run.
PAIR = {"max_steps": 256, "evo_steps": 128, "pop_size": 2, "seed": 0, "eval_steps": 20}


def test_every_fact_of_the_run_must_allow_cohorts():
    shared = Cohorting(True, True, ReplayBuffer, frozenset({ReplayBuffer}))
    assert trains_in_cohorts(shared)
    assert trains_in_cohorts(replace(shared, memory=None))  # on-policy: no memory shared
    assert not trains_in_cohorts(replace(shared, enabled=False))  # training.cohorts false
    assert not trains_in_cohorts(replace(shared, copies=False))  # an environment object
    assert not trains_in_cohorts(replace(shared, memory=PrioritizedReplayBuffer))  # no view
    assert not trains_in_cohorts(Cohorting())  # the default: alone


def test_a_factory_given_in_python_trains_in_cohorts_like_a_named_environment(formed):
    trainer = LocalTrainer("DQN", {"num_envs": 2}, PAIR, env=ActionRewardEnv)
    _, fitnesses = trainer.train(verbose=False)
    assert formed and all(groups == [[0, 1]] for groups in formed)
    alone = LocalTrainer("DQN", {"num_envs": 2}, {**PAIR, "cohorts": False}, env=ActionRewardEnv)
    assert alone.train(verbose=False)[1] == fitnesses  # a cohort changes no agent's results


def test_an_environment_object_given_in_python_trains_one_agent_at_a_time(formed):
    LocalTrainer("DQN", training=PAIR, env=ActionRewardEnv()).train(verbose=False)
    assert formed and all(groups == [[0], [1]] for groups in formed)


def _cohort_needs(trainer: LocalTrainer) -> list[str]:
    estimate = trainer.preflight()
    assert estimate is not None
    return [need.field for need in estimate.needs if need.field == "training.cohorts"]


def test_the_preflight_counts_cohorts_where_the_run_forms_them():
    assert _cohort_needs(LocalTrainer("DQN", {"num_envs": 2}, PAIR, env=ActionRewardEnv))
    assert not _cohort_needs(LocalTrainer("DQN", training=PAIR, env=ActionRewardEnv()))
    frames = {"max_size": 1_000, "storage": "frames"}  # a buffer no cohort has a view of
    assert not _cohort_needs(LocalTrainer("DQN", "CartPole-v1", PAIR, replay_buffer=frames))
