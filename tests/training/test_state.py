"""The state of a run (agilerl/training/state.py): what a checkpoint saves and a resumed
run continues from; the elite, the best agent ever evaluated, kept as an exact copy that
changes nothing in the run; why a run stopped, and whether that still holds; the seeds
of its resets and of each agent's turn."""

from __future__ import annotations

import gymnasium as gym
import torch

from agilerl.algorithms import DQN
from agilerl.models.training import TrainingSpec
from agilerl.training.state import (
    RunState,
    reset_seed,
    snapshot,
    still_finished,
    turn_generators,
)


def _agent(index=0):
    env = gym.make("CartPole-v1")
    net = {"encoder_config": {"hidden_size": [8]}, "head_config": {"hidden_size": [8]}}
    return DQN(env.observation_space, env.action_space, net_config=net, index=index, seed=index)


def test_the_saved_state_round_trips_without_what_is_not_saved():
    state = RunState(seed=5, generation=2, steps=300, history=[{"steps": 100}], finished=None)
    state.elite, state.warned = object(), {UserWarning}
    data = state.to_dict()
    assert "elite" not in data and "warned" not in data
    again = RunState.from_dict(data)
    assert again == state and again.elite is None and again.warned == set()
    data["history"].append({"steps": 200})  # a deep copy: the state is not changed
    assert state.history == [{"steps": 100}]


def test_only_an_agent_better_than_every_one_before_becomes_the_elite():
    state = RunState(generation=1)
    first, second = _agent(0), _agent(1)
    assert state.best_fitness is None
    assert state.consider(first, 10.0)
    assert not state.consider(second, 10.0)  # equal is not better
    state.generation = 3
    assert state.consider(second, 12.5)
    assert state.best == {"fitness": 12.5, "generation": 3, "index": 1}
    assert state.elite.index == 1 and state.elite is not second


def test_an_elite_in_another_process_is_recorded_without_a_copy():
    state = RunState()
    assert state.record_best(1.0, 4, lambda: None)
    assert state.best == {"fitness": 1.0, "generation": 0, "index": 4} and state.elite is None


def test_a_snapshot_is_exact_and_independent_and_changes_nothing_in_the_run():
    agent = _agent()
    stream = agent.rng.bit_generator.state
    torch_state = torch.get_rng_state()
    twin = snapshot(agent)
    assert torch.equal(torch.get_rng_state(), torch_state)  # no draw left behind
    assert agent.rng.bit_generator.state == stream
    for ours, theirs in zip(agent.actor.parameters(), twin.actor.parameters(), strict=True):
        assert torch.equal(ours, theirs) and ours.data_ptr() != theirs.data_ptr()
    assert twin.rng.integers(1 << 30) == agent.rng.integers(1 << 30)  # the same stream, apart


def test_a_run_stopped_on_its_budget_goes_on_when_the_budget_is_raised():
    state = RunState(steps=1_000, finished="max_steps")
    assert still_finished(state, TrainingSpec(max_steps=1_000))
    assert not still_finished(state, TrainingSpec(max_steps=2_000))


def test_a_run_stopped_on_its_target_goes_on_when_the_target_is_raised_or_removed():
    state = RunState(finished="target_score", best={"fitness": 50.0, "generation": 1, "index": 0})
    assert still_finished(state, TrainingSpec(target_score=40.0))
    assert not still_finished(state, TrainingSpec(target_score=60.0))
    assert not still_finished(state, TrainingSpec())


def test_a_run_a_callback_stopped_goes_on_and_an_unfinished_run_is_not_finished():
    assert not still_finished(RunState(finished="callback"), TrainingSpec())
    assert not still_finished(RunState(), TrainingSpec())
    assert still_finished(RunState(finished="diverged"), TrainingSpec())  # no rule: it holds


def test_reset_seeds_are_fixed_by_seed_generation_slot_and_purpose():
    state = RunState(seed=7, generation=3)
    seeds = {
        (slot, purpose): reset_seed(state, slot, purpose)
        for slot in range(3)
        for purpose in range(3)
    }
    assert len(set(seeds.values())) == 9  # every slot and purpose its own
    assert reset_seed(RunState(seed=7, generation=3), 1, 0) == seeds[(1, 0)]  # as resumed
    assert reset_seed(RunState(seed=7, generation=4), 1, 0) != seeds[(1, 0)]
    assert all(0 <= seed < 2**32 for seed in seeds.values())


def test_each_agent_of_a_cohort_turn_draws_as_its_own_turn_would():
    state = RunState(seed=1, generation=2)
    cohort = turn_generators(state, [0, 3])
    alone = turn_generators(state, [3])
    assert torch.equal(torch.rand(4, generator=cohort[1]), torch.rand(4, generator=alone[0]))
    slot_0, slot_3 = turn_generators(state, [0, 3])
    assert not torch.equal(torch.rand(4, generator=slot_0), torch.rand(4, generator=slot_3))
