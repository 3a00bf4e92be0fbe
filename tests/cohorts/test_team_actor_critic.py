"""MADDPG and MATD3 teams as a cohort: each team's update is its own (its gamma, tau,
learning rates, batch size, policy_freq, smoothing noise, optimiser states), a team not
learning is left bit-equal, each team explores with its own noise, and a population
trains in cohorts, deterministic for a seed, learning as one team at a time does."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from support.team_cohorts import NET, cohort_need, cue_manifest, trained_cohorts

from agilerl.algorithms.maddpg import MADDPG
from agilerl.algorithms.matd3 import MATD3
from agilerl.cohorts.learners import cohort_key, form_cohorts
from agilerl.cohorts.team_actor_critic import TeamActorCriticCohort
from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer
from agilerl.families.multi_agent.loops import _transition
from agilerl.families.multi_agent.vector import make_vector_env
from agilerl.models.env import PzEnvSpec

#: Each team's own settings: batch sizes differ (the cohort pads the smaller one).
OWN = [
    {"gamma": 0.9, "tau": 0.01, "lr_actor": 1e-3, "lr_critic": 2e-3, "policy_freq": 1,
     "batch_size": 8},
    {"gamma": 0.95, "tau": 0.05, "lr_actor": 3e-3, "lr_critic": 4e-3, "policy_freq": 2,
     "batch_size": 5},
    {"gamma": 0.99, "tau": 0.1, "lr_actor": 5e-3, "lr_critic": 1e-2, "policy_freq": 3,
     "batch_size": 8},
]  # fmt: skip
#: MPE's simple_spread with Box actions: one group of three members, so the cohort
#: reorders every group batch team by team and back.
SPREAD = PzEnvSpec(name="mpe2.simple_spread_v3", num_envs=2, sync=True,
                   config={"continuous_actions": True, "N": 3})  # fmt: skip
#: The cue game: two groups of one member each, categorical actions.
CUE = PzEnvSpec(name="cue", entrypoint="agilerl.testing.cooperative:cue_game", num_envs=2,
                sync=True)  # fmt: skip
#: The cue game with a Dict and an image observation (encoders that do not stack).
AWKWARD = PzEnvSpec(name="awkward", entrypoint="agilerl.testing.cooperative:awkward_cue_game",
                    num_envs=1, sync=True)  # fmt: skip


def teams(cls, spec=SPREAD, own=OWN, **common):
    with make_vector_env(spec, 1) as one:
        spaces = (one.observation_spaces, one.action_spaces)
    torch.manual_seed(0)
    return [
        cls(*spaces, index=i, seed=i, **{"net_config": NET, **settings, **common})
        for i, settings in enumerate(own)
    ]


def filled(team, spec=SPREAD, steps=20):
    """A buffer of ``steps`` vector steps of ``team`` exploring ``spec``'s env."""
    memory = MultiAgentReplayBuffer(1000)
    with make_vector_env(spec) as env:
        obs, infos = env.reset(seed=1)
        for _ in range(steps):
            actions = team.explore(obs, infos)
            step = env.step(actions)
            memory.add(*_transition(env.agent_ids, obs, infos, actions, step))
            obs, infos = step[0], step[4]
    return memory


def state_of(team):
    """Every network's weights, every optimiser's state, the learn counter and the
    generator, copied."""
    optimizers = {
        name: copy.deepcopy(getattr(team, name).state_dict()["state"])
        for name in team.optimizer_specs
    }
    return {
        "weights": [p.detach().clone() for p in team.network_parameters()],
        "targets": [
            p.detach().clone()
            for name in team.target_networks
            for p in getattr(team, name).parameters()
        ],  # fmt: skip
        "optimizers": optimizers,
        "learn_counter": team.learn_counter,
        "rng": copy.deepcopy(team.rng.bit_generator.state),
    }


def assert_same_team(a, b, exact=False):
    sa, sb = state_of(a), state_of(b)
    assert sa["learn_counter"] == sb["learn_counter"]
    assert sa["rng"] == sb["rng"]  # the same smoothing and exploration draws
    for x, y in zip(sa["weights"] + sa["targets"], sb["weights"] + sb["targets"], strict=True):
        if exact:
            assert torch.equal(x, y)
        else:
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    for name, state in sa["optimizers"].items():
        assert state.keys() == sb["optimizers"][name].keys(), name
        for key, entry in state.items():
            other = sb["optimizers"][name][key]
            assert float(entry["step"]) == float(other["step"]), name
            for moment in ("exp_avg", "exp_avg_sq"):
                if exact:
                    assert torch.equal(entry[moment], other[moment]), name
                else:
                    torch.testing.assert_close(
                        entry[moment], other[moment], rtol=1e-4, atol=1e-6, msg=name
                    )


def cohort_round(cohort, memory, together, alone, live, seed):
    """One learning call of the cohort (each team's rows drawn for it) beside each live
    team's own ``learn`` on the same rows; their metrics."""
    rows = max(team.batch_size for team in together)
    slots = torch.randint(0, len(memory), (len(together), rows),
                          generator=torch.Generator().manual_seed(seed))  # fmt: skip
    got = cohort.learn(memory.sample_from_indices(slots.reshape(-1)), np.array(live), [])
    expected = [
        team.learn(memory.sample_from_indices(slots[p, : team.batch_size])) if on else None
        for p, (team, on) in enumerate(zip(alone, live, strict=True))
    ]
    return got, expected


@pytest.mark.parametrize("cls", [MADDPG, MATD3])
def test_a_cohort_update_is_each_teams_own_update(cls):
    """Four calls, team 1 left out of the second: each team's metrics, weights, targets,
    both optimisers' states, learn counter (policy_freq 1, 2, 3: actors due on different
    calls) and generator (MATD3's smoothing noise) end where its own updates take them."""
    together = teams(cls)
    memory = filled(together[0])
    alone = copy.deepcopy(together)
    cohort = TeamActorCriticCohort(together)
    for step in range(4):
        live = [True, step != 1, True]
        got, expected = cohort_round(cohort, memory, together, alone, live, seed=step)
        for p, (g, e) in enumerate(zip(got, expected, strict=True)):
            if e is None:
                assert g is None
                continue
            assert g is not None and g.keys() == e.keys(), (step, p)
            for name in e:
                assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), (step, p, name)
    cohort.write_back()
    for a, b in zip(alone, together, strict=True):
        assert_same_team(a, b)


def test_a_team_not_learning_is_left_bit_equal():
    together = teams(MATD3)
    memory = filled(together[0])
    cohort = TeamActorCriticCohort(together)
    cohort_round(cohort, memory, together, copy.deepcopy(together), [True] * 3, seed=0)
    cohort.write_back()
    before = copy.deepcopy(together[1])
    cohort = TeamActorCriticCohort(together)
    got, _ = cohort_round(cohort, memory, together, copy.deepcopy(together),
                          [True, False, True], seed=1)  # fmt: skip
    cohort.write_back()
    assert got[1] is None and got[0] is not None
    assert_same_team(before, together[1], exact=True)


def test_two_groups_with_categorical_actions_learn_their_critics_as_each_teams_own():
    """The cue game: two groups (the cohort's group loop and its reordering per group)
    with categorical actions. MATD3's first call updates only the critics (policy_freq
    2), which read the target actors' greedy choices: each team's own critic update.
    (The actors' update differentiates a Gumbel-softmax sample from torch's generator,
    which a cohort draws for all its teams at once.)"""
    own = [{**settings, "policy_freq": 2} for settings in OWN]
    together = teams(MATD3, CUE, own)
    assert len(together[0].groups) == 2
    memory = filled(together[0], CUE)
    alone = copy.deepcopy(together)
    cohort = TeamActorCriticCohort(together)
    got, expected = cohort_round(cohort, memory, together, alone, [True] * 3, seed=0)
    for g, e in zip(got, expected, strict=True):
        assert g is not None and e is not None and "actor_loss" not in e
        for name in e:
            assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), name
    cohort.write_back()
    for a, b in zip(alone, together, strict=True):
        assert_same_team(a, b)


def test_each_teams_exploration_is_its_own():
    """One forward per group for every team's rows: each team's Box actions (its
    actor's, plus its own Ornstein-Uhlenbeck noise from its own generator) are those it
    takes alone on its own rows."""
    together = teams(MADDPG)
    alone = copy.deepcopy(together)
    cohort = TeamActorCriticCohort(together)
    n = SPREAD.num_envs
    with make_vector_env(SPREAD, 3 * n) as env:
        obs, infos = env.reset_each([4, 5, 6])
        for _ in range(3):
            actions = cohort.explore(obs, infos)
            for p, team in enumerate(alone):
                own = team.explore({a: o[p * n : (p + 1) * n] for a, o in obs.items()})
                for agent, action in own.items():
                    np.testing.assert_allclose(actions[agent][p * n : (p + 1) * n], action,
                                               rtol=1e-5, atol=1e-6)  # fmt: skip
            obs, _, _, _, infos = env.step(actions)
    for a, b in zip(alone, together, strict=True):
        assert a.rng.bit_generator.state == b.rng.bit_generator.state


def test_teams_form_cohorts_by_architecture():
    population = teams(MADDPG, CUE)
    population += teams(MATD3, CUE)
    grown = teams(MADDPG, CUE, OWN[:1], net_config={**NET, "latent_dim": 32})
    population += grown
    assert all(cohort_key(team) is None for team in teams(MADDPG, AWKWARD))
    assert form_cohorts(dict(enumerate(population))) == [[0, 1, 2], [3, 4, 5], [6]]
    assert form_cohorts(dict(enumerate(population)), enabled=False) == [[i] for i in range(7)]


def train(cohorts, cls=MADDPG, seed=3, pop=3, steps=384):
    from agilerl.hpo.tournament import TournamentSelection
    from agilerl.training import train_multi_agent_off_policy
    from agilerl.training.state import RunState

    spec = CUE.model_copy(update={"num_envs": 4})
    env = make_vector_env(spec)
    torch.manual_seed(seed)
    population = [
        cls(env.observation_spaces, env.action_spaces, index=i, seed=seed * 10 + i,
            net_config=NET, batch_size=32, learn_step=8, lr_actor=1e-3, lr_critic=3e-3)
        for i in range(pop)
    ]  # fmt: skip
    with env:
        return train_multi_agent_off_policy(
            env, "cue", cls.__name__, population, MultiAgentReplayBuffer(10_000),
            env_spec=spec, max_steps=steps, evo_steps=steps // 2, eval_loop=4, verbose=False,
            cohorts=cohorts, state=RunState(seed=seed),
            selection_strategy=TournamentSelection(2, True, pop, rand_seed=seed),
        )  # fmt: skip


@pytest.mark.parametrize("cls", [MADDPG, MATD3])
def test_a_population_trains_in_cohorts_deterministically(cls, monkeypatch):
    calls = []
    real = TeamActorCriticCohort.learn

    def spy(self, *args):
        calls.append(len(self.agents))
        return real(self, *args)

    monkeypatch.setattr(TeamActorCriticCohort, "learn", spy)
    first, fitness_a = train(True, cls)
    assert calls and set(calls) == {3}  # the three teams learnt as one
    second, fitness_b = train(True, cls)
    assert fitness_a == fitness_b
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a.network_parameters(), b.network_parameters(), strict=True):
            assert torch.equal(x, y)
    calls.clear()
    train(False, cls)
    assert calls and set(calls) == {1}  # one team at a time, on the view of itself


def maddpg_manifest(cohorts=True):
    algorithm = {"name": "MADDPG", "batch_size": 16, "learn_step": 8}
    return cue_manifest(algorithm, 128, cohorts, replay_buffer={"max_size": 1000})


@pytest.mark.parametrize("cohorts", [True, False])
def test_the_preflight_counts_a_team_cohorts_copies_and_rows(cohorts):
    need = cohort_need(maddpg_manifest(cohorts))
    if not cohorts:
        assert need is None
        return
    assert need.detail == (
        "3 x 4 environment copies stepped together in this process, and each team's 68 "
        "transitions of a generation"
    )
    # at least three teams' 68 rows of both agents' observations, twice (float32)
    observations = sum(
        s.shape[0] for s in teams(MADDPG, CUE, OWN[:1])[0].observation_spaces.values()
    )
    assert need.bytes > 3 * 68 * 2 * observations * 4


def test_a_manifest_trains_its_teams_in_cohorts(monkeypatch, tmp_path):
    """``agilerl train``'s path: the environment section reaches the loop, the teams
    step copies of it in this process and learn as one cohort, and every team is saved
    as a team trained alone would be."""
    out = tmp_path / "run"
    sizes, population = trained_cohorts(monkeypatch, TeamActorCriticCohort, maddpg_manifest(), out)
    assert sizes == [3, 3]  # both generations, one cohort of three
    assert all(team.steps == 128 for team in population)
    assert (out / "population.pt").exists()


@pytest.mark.slow
@pytest.mark.parametrize("cls", [MADDPG, MATD3])
def test_cohorts_learn_the_cue_game_as_teams_one_at_a_time_do(cls):
    """The same population and budget both ways, over seeds: the final best fitness in
    cohorts is within seed noise of the one-at-a-time path's (not bit-equal: batched
    matrix products sum in another order, and the batches come from the teams' own
    generators), and both learn (a random team scores 2 on the cue game of 4 steps; the
    optimum is 7)."""
    seeds = range(4)
    both = {
        cohorts: [max(train(cohorts, cls, seed, pop=4, steps=1536)[1]) for seed in seeds]
        for cohorts in (True, False)
    }
    for cohorts, best in both.items():
        assert np.mean(best) > 4.0, (cohorts, best)
    assert abs(np.mean(both[True]) - np.mean(both[False])) < 1.0, both
