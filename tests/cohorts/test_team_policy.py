"""IPPO teams as a cohort: each team's rollout is its own (its environment's episodes, its
networks' values and log-probabilities), each team's update is its own IPPO update (its
coefficients, clip, epochs and target_kl), teams whose samples do not line up learn one
after another on their own networks, and a population trains in cohorts, deterministic
for a seed, learning as one team at a time does."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from support.ppo_cohorts import NET, OWN
from support.team_cohorts import cohort_need, cue_manifest, trained_cohorts

from agilerl.algorithms.ippo import IPPO, team_metrics
from agilerl.cohorts.learners import cohort_key, form_cohorts
from agilerl.cohorts.team_policy import TeamPolicyCohort
from agilerl.cohorts.team_views import TeamBlock
from agilerl.components import on_policy
from agilerl.families.multi_agent.buffers import MultiAgentRollout, TeamRolloutCollector
from agilerl.families.multi_agent.vector import ParallelVecEnv
from agilerl.testing.cooperative import awkward_cue_game, cue_game

N = 2  # copies per team


def vec(make=cue_game, n=N):
    return ParallelVecEnv([make] * n)


def teams(make=cue_game, **common):
    env = vec(make, 1)
    torch.manual_seed(0)
    settings = {"batch_size": 8, "learn_step": 16, "update_epochs": 2, "net_config": NET}
    built = [
        IPPO(
            env.observation_spaces,
            env.action_spaces,
            index=i,
            seed=i,
            **{**settings, **own, **common},
        )  # fmt: skip
        for i, own in enumerate(OWN)
    ]
    env.close()
    return built


def collected(population, make=cue_game, seeds=(10, 11, 12)):
    """``population`` as a cohort that collected one rollout on its teams' copies joined
    (team ``p``'s reset with ``seeds[p]``): the cohort, the rollout, the last obs."""
    cohort = TeamPolicyCohort(population)
    cohort.use_copies(N)
    env = vec(make, N * len(population))
    obs, infos = env.reset_each(list(seeds))
    torch.manual_seed(100)
    length = population[0].learn_step // N
    rollout = MultiAgentRollout(length, env.num_envs)
    collector = TeamRolloutCollector(cohort, rollout, env.agent_ids)
    obs, _ = on_policy.collect_rollout(env, collector, obs, infos, length)
    env.close()
    return cohort, rollout, obs


def block(obs, p):
    return {a: v[p * N : (p + 1) * N] for a, v in obs.items()}


def assert_same_team(a, b):
    for x, y in zip(a.network_parameters(), b.network_parameters(), strict=True):
        torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
    for group in a.groups:
        name = a.net_name("optimizer", group)
        sa = getattr(a, name).state_dict()["state"]
        sb = getattr(b, name).state_dict()["state"]
        assert sa.keys() == sb.keys()
        for key in sa:
            assert float(sa[key]["step"]) == float(sb[key]["step"])
            torch.testing.assert_close(sa[key]["exp_avg"], sb[key]["exp_avg"], rtol=1e-4, atol=1e-6)


def test_a_cohort_update_is_each_teams_own_ippo_update(make=cue_game):
    """Two groups (seer and blind). Each team alone learns from its block of the
    cohort's rollout with its own minibatch orders, and ends where the cohort left it."""
    together = teams(make, target_kl=0.05)
    together[1].target_kl = 1e-4  # stops early, on its own
    cohort, rollout, last_obs = collected(together, make)
    alone = copy.deepcopy(together)
    expected = []
    for p, team in enumerate(alone):
        torch.manual_seed(7 + p)  # its own turn's stream: its minibatch orders
        expected.append(team.learn(TeamBlock(rollout, p, N), block(last_obs, p)))
    got = cohort.learn(rollout, last_obs, [torch.Generator().manual_seed(7 + p) for p in range(3)])
    cohort.write_back()
    assert expected[1]["early_stop"] > 0.0 and expected[0]["early_stop"] == 0.0
    assert expected[2]["updates"] > expected[0]["updates"]  # its third epoch
    for e, g in zip(expected, got, strict=True):
        assert g.keys() == e.keys()
        for name in e:
            assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), name
    for a, b in zip(alone, together, strict=True):
        assert_same_team(a, b)


def test_each_teams_rollout_is_its_own():
    population = teams()
    _, rollout, _ = collected(population)
    for p, team in enumerate(population):
        own = TeamBlock(rollout, p, N)
        # its steps are those of its own env, reset with its own seed
        env = vec()
        seen, _ = env.reset(seed=10 + p)
        for t in range(len(rollout)):
            for agent in team.agent_ids:
                np.testing.assert_array_equal(own.obs[agent][t].numpy(), seen[agent])
            seen, *_ = env.step({a: own.action[a][t].numpy() for a in team.agent_ids})
        env.close()
        # its values and log-probabilities are its own networks'
        for group, members in team.groups.items():
            steps = {a: own.obs[a].reshape(-1, *own.obs[a].shape[2:]) for a in members}
            x = team.group_obs(steps, members)
            with torch.no_grad():
                dist, values = team.group_forward(group, x, None)
            actions = torch.cat([own.action[a].reshape(-1) for a in members])
            log_probs = dist.log_prob(team.net("actor", group).distribution.samples(actions))
            stored = torch.cat([own.value[a].reshape(-1) for a in members])
            torch.testing.assert_close(stored, values, rtol=1e-5, atol=1e-5)
            stored = torch.cat([own.log_prob[a].reshape(-1) for a in members])
            torch.testing.assert_close(stored, log_probs, rtol=1e-5, atol=1e-5)


def test_teams_whose_samples_do_not_line_up_learn_one_after_another(monkeypatch):
    """One team's agent marked inactive at a step: its groups' sample counts differ from
    the other teams', so each team learns those groups alone (its own networks and
    optimiser, orders seeded from its generator), and the cohort goes on from there."""
    together = teams()
    cohort, rollout, last_obs = collected(together)
    for agent in together[0].agent_ids:
        rollout.field("active")[agent][0, N] = False  # team 1, its first copy, step 0
    alone = copy.deepcopy(together)
    in_turn = []
    real = IPPO._epochs_each
    monkeypatch.setattr(
        IPPO,
        "_epochs_each",
        lambda self, view, group, *a: (in_turn.append(group), real(self, view, group, *a))[1],
    )
    generators = [torch.Generator().manual_seed(7 + p) for p in range(3)]
    got = cohort.learn(rollout, last_obs, generators)
    assert in_turn == list(together[0].groups)
    cohort.write_back()
    mirrors = [torch.Generator().manual_seed(7 + p) for p in range(3)]
    for p, team in enumerate(alone):
        last = team.values(block(last_obs, p))
        updated = []
        for group in team.groups:
            samples = team.group_samples(group, TeamBlock(rollout, p, N), last, None)
            torch.manual_seed(int(torch.randint(2**31, (1,), generator=mirrors[p])))
            totals, evaluated, steps, early = team.update_group(group, samples)
            updated.append((totals / max(evaluated, 1), steps, early))
        expected = team_metrics(updated)
        assert got[p].keys() == expected.keys()
        for name in expected:
            assert got[p][name] == pytest.approx(expected[name], rel=1e-4, abs=1e-6), name
        assert_same_team(team, together[p])


def test_ippo_teams_form_a_cohort_only_with_the_same_loop_shape():
    same = teams()
    env = vec(cue_game, 1)
    spaces = (env.observation_spaces, env.action_spaces)
    env.close()
    other_batch = IPPO(*spaces, index=3, net_config=NET, batch_size=4, learn_step=16)
    bounded = IPPO(*spaces, index=4, net_config=NET, batch_size=8, learn_step=16,
                   action_batch_size=4)  # fmt: skip
    wider = IPPO(*spaces, index=5, batch_size=8, learn_step=16,
                 net_config={**NET, "latent_dim": 32})  # fmt: skip
    population = dict(enumerate([*same, other_batch, bounded, wider]))
    assert cohort_key(bounded) is None  # acts in chunks of its own: alone
    # a Dict observation (multi-input encoder) and an image one (CNN) do not stack
    assert all(cohort_key(team) is None for team in teams(awkward_cue_game))
    assert form_cohorts(population) == [[0, 1, 2], [3], [4], [5]]
    assert form_cohorts(population, enabled=False) == [[i] for i in range(6)]


def train(cohorts, seed=3, pop=3, steps=192):
    from agilerl.families.multi_agent.vector import make_vector_env
    from agilerl.hpo.tournament import TournamentSelection
    from agilerl.models.env import PzEnvSpec
    from agilerl.training import train_multi_agent_on_policy
    from agilerl.training.state import RunState

    spec = PzEnvSpec(name="cue", entrypoint="agilerl.testing.cooperative:cue_game", num_envs=4,
                     sync=True)  # fmt: skip
    env = make_vector_env(spec)
    torch.manual_seed(seed)
    population = [
        IPPO(env.observation_spaces, env.action_spaces, index=i, seed=seed * 10 + i,
             net_config=NET, batch_size=32, learn_step=64, lr=3e-3, ent_coef=0.0)
        for i in range(pop)
    ]  # fmt: skip
    with env:
        trained, fitnesses = train_multi_agent_on_policy(
            env, "cue", "IPPO", population, env_spec=spec, max_steps=steps, evo_steps=steps // 2,
            eval_loop=4, verbose=False, cohorts=cohorts, state=RunState(seed=seed),
            selection_strategy=TournamentSelection(2, True, pop, rand_seed=seed),
        )  # fmt: skip
    return trained, fitnesses


def test_an_ippo_population_trains_in_cohorts_deterministically(monkeypatch):
    calls = []
    real = TeamPolicyCohort.learn

    def spy(self, *args):
        calls.append(len(self.agents))
        return real(self, *args)

    monkeypatch.setattr(TeamPolicyCohort, "learn", spy)
    first, fitness_a = train(True)
    assert calls and calls[0] == 3  # the three teams learnt as one
    second, fitness_b = train(True)
    assert fitness_a == fitness_b
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a.network_parameters(), b.network_parameters(), strict=True):
            assert torch.equal(x, y)


@pytest.mark.slow
def test_cohorts_learn_the_cue_game_as_teams_one_at_a_time_do():
    """The same population and budget both ways, over seeds: the final best fitness in
    cohorts is within seed noise of the one-at-a-time path's (not bit-equal: batched
    matrix products sum in another order), and both learn (a random team scores 2 on
    the cue game of 4 steps; the optimum is 7)."""
    seeds = range(4)
    both = {
        cohorts: [max(train(cohorts, seed, pop=4, steps=1536)[1]) for seed in seeds]
        for cohorts in (True, False)
    }
    for cohorts, best in both.items():
        assert np.mean(best) > 4.0, (cohorts, best)
    assert abs(np.mean(both[True]) - np.mean(both[False])) < 1.0, both


def ippo_manifest(cohorts=True):
    algorithm = {"name": "IPPO", "batch_size": 32, "learn_step": 64, "update_epochs": 2}
    return cue_manifest(algorithm, 256, cohorts)


@pytest.mark.parametrize("cohorts", [True, False])
def test_the_preflight_counts_a_team_cohorts_copies_and_rollouts(cohorts):
    need = cohort_need(ippo_manifest(cohorts))
    if not cohorts:
        assert need is None
        return
    assert need.detail == (
        "3 x 4 environment copies stepped together in this process, and 2 more teams' "
        "rollouts held at once"
    )
    # at least two more rollouts of 64 steps of both agents' observations (float32)
    observations = sum(s.shape[0] for s in teams()[0].observation_spaces.values())
    assert need.bytes > 2 * 64 * observations * 4


def test_a_manifest_trains_its_teams_in_cohorts(monkeypatch, tmp_path):
    """``agilerl train``'s path: the environment section reaches the loop, the teams
    step copies of it in this process and learn as one cohort, and every team is saved
    as a team trained alone would be."""
    out = tmp_path / "run"
    sizes, population = trained_cohorts(monkeypatch, TeamPolicyCohort, ippo_manifest(), out)
    assert sizes == [3, 3]  # both generations, one cohort of three
    assert all(team.steps == 256 for team in population)
    assert (out / "population.pt").exists()


def test_a_group_of_three_members_with_box_actions_learns_as_each_teams_own():
    """MPE's simple_spread: one group of three agents (its rows batched member by member,
    so the cohort reorders them team by team and back) with Gaussian Box actions (each
    team's own learnt log_std)."""
    from agilerl.families.multi_agent.vector import make_vector_env
    from agilerl.models.env import PzEnvSpec

    spec = PzEnvSpec(name="mpe2.simple_spread_v3", num_envs=N, sync=True,
                     config={"continuous_actions": True, "N": 3})  # fmt: skip
    with make_vector_env(spec, 1) as one:
        spaces = (one.observation_spaces, one.action_spaces)
    torch.manual_seed(0)
    together = [
        IPPO(*spaces, index=i, seed=i, net_config=NET, batch_size=16, learn_step=32,
             action_std_init=0.5, **{"update_epochs": 2, **own})
        for i, own in enumerate(OWN)
    ]  # fmt: skip
    assert list(together[0].groups) == ["agent"] and len(together[0].groups["agent"]) == 3
    cohort = TeamPolicyCohort(together)
    cohort.use_copies(N)
    with make_vector_env(spec, 3 * N) as env:
        obs, infos = env.reset_each([1, 2, 3])
        rollout = MultiAgentRollout(16, env.num_envs)
        collector = TeamRolloutCollector(cohort, rollout, env.agent_ids)
        obs, _ = on_policy.collect_rollout(env, collector, obs, infos, 16)
    alone = copy.deepcopy(together)
    expected = []
    for p, team in enumerate(alone):
        torch.manual_seed(7 + p)
        expected.append(team.learn(TeamBlock(rollout, p, N), block(obs, p)))
    got = cohort.learn(rollout, obs, [torch.Generator().manual_seed(7 + p) for p in range(3)])
    cohort.write_back()
    for e, g in zip(expected, got, strict=True):
        for name in e:
            assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), name
    for a, b in zip(alone, together, strict=True):
        assert_same_team(a, b)
