"""A team cohort's row layouts: a group batch in ``member, team, row`` order, reordered
``team, member, row`` for the stacked networks and back; a team's own rows found in it;
per-team draws joined into it."""

from __future__ import annotations

import numpy as np
import torch

from agilerl.algorithms.core.population import Population
from agilerl.algorithms.maddpg import MADDPG
from agilerl.cohorts.team_rows import joined, own_rows, team_major
from agilerl.cohorts.team_views import TeamPopulation
from agilerl.families.multi_agent.vector import ParallelVecEnv
from agilerl.testing.cooperative import cue_game

MEMBERS, TEAMS, ROWS = 3, 2, 4


def labelled():
    """Row ``(member, team, row)`` of a group batch holds ``100 m + 10 t + r``."""
    m, t, r = np.meshgrid(range(MEMBERS), range(TEAMS), range(ROWS), indexing="ij")
    return torch.as_tensor((100 * m + 10 * t + r).reshape(-1))


def test_team_major_makes_each_teams_rows_one_block_and_back():
    batch = labelled()
    order, back = team_major(MEMBERS, TEAMS, ROWS)
    blocks = batch[order].reshape(TEAMS, -1)
    for t in range(TEAMS):
        assert ((blocks[t] // 10) % 10 == t).all()  # the team's block holds only its rows
        # member by member within the block, as the team's own batch
        assert blocks[t].tolist() == [100 * m + 10 * t + r for m in range(MEMBERS)
                                      for r in range(ROWS)]  # fmt: skip
    assert torch.equal(batch[order][back], batch)


def test_own_rows_are_a_teams_first_rows_of_each_member():
    batch = labelled()
    at = own_rows(MEMBERS, TEAMS, ROWS, team=1, size=2)
    assert batch[at].tolist() == [10, 11, 110, 111, 210, 211]


def test_joined_places_each_teams_draws_in_its_rows_and_zeros_elsewhere():
    first = np.arange(MEMBERS * ROWS).reshape(-1, 1) + 1.0  # all its rows
    second = -(np.arange(MEMBERS * 2).reshape(-1, 1) + 1.0)  # its first 2 per member
    out = joined([first, second], MEMBERS, ROWS)
    assert out.shape == (MEMBERS * TEAMS * ROWS, 1)
    assert np.array_equal(out[own_rows(MEMBERS, TEAMS, ROWS, 0, ROWS).numpy()], first)
    assert np.array_equal(out[own_rows(MEMBERS, TEAMS, ROWS, 1, 2).numpy()], second)
    assert np.count_nonzero(out) == first.size + second.size  # padding rows are zeros
    assert not joined([None, second], MEMBERS, ROWS)[: TEAMS * ROWS][:ROWS].any()


def test_a_team_view_lays_out_its_teams_rows_and_the_view_of_one_leaves_them_as_they_are():
    """What a multi-agent update asks its view: the stacked view of teams (batch sizes
    4 and 2) reorders a group batch team by team and back, finds a learning team's own
    rows and joins each team's own draws; the view of one team is its own batch."""
    env = ParallelVecEnv([cue_game])
    teams = [MADDPG(env.observation_spaces, env.action_spaces, index=i, batch_size=size)
             for i, size in enumerate((4, 2))]  # fmt: skip
    env.close()
    view, one = TeamPopulation(teams), Population.of(teams[0])
    batch = labelled()
    order, _ = team_major(MEMBERS, TEAMS, ROWS)
    assert torch.equal(view.team_major(batch, MEMBERS), batch[order])
    assert torch.equal(view.member_major(view.team_major(batch, MEMBERS), MEMBERS), batch)
    ((p, rows),) = view.team_blocks(len(batch), MEMBERS, np.array([False, True]))
    assert p == 1 and batch[rows].tolist() == [10, 11, 110, 111, 210, 211]
    drawn = view.team_drawn(lambda team, n: np.full((n, 1), team.batch_size), len(batch), MEMBERS)
    assert np.array_equal(drawn, joined([np.full((12, 1), 4), np.full((6, 1), 2)], MEMBERS, ROWS))
    assert one.team_major(batch, MEMBERS) is batch and one.member_major(batch, MEMBERS) is batch
    assert one.team_blocks(len(batch), MEMBERS) == [(0, slice(None))]
