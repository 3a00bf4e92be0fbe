"""A cohort's views of the shared buffer: each agent sees the generation's buffer plus its
own rows (never another agent's), and leaves the journal its own turn would have left."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agilerl.cohorts.replay import CohortReplay
from agilerl.components.replay_buffer import FIELDS, ReplayBuffer

N = 3  # environments per agent


def step(tag, t, n=N):
    """One vector step whose rows say who wrote them (obs[:, 0]) and when (obs[:, 1])."""
    obs = np.stack([np.full(n, tag, np.float32), np.full(n, t, np.float32)], 1)
    return obs, np.full(n, t, np.int64), np.full(n, float(tag)), obs + 1, np.zeros(n, bool)


def joined(parts):
    """The agents' steps as one cohort step (agent ``p``'s rows the ``p``-th block)."""
    return {
        name: np.concatenate(field)
        for name, field in zip(FIELDS, zip(*parts, strict=True), strict=True)
    }


def filled(max_size, rows):
    memory = ReplayBuffer(max_size)
    for t in range(rows // N):
        memory.add(*step(-1, t))
    return memory


@pytest.mark.parametrize(
    ("max_size", "before", "steps"),
    [(30, 0, 4), (30, 9, 4), (30, 27, 5), (12, 12, 9), (30, 6, 14)],
    ids=["empty", "partly", "reaching-full", "wrapping-twice", "more-than-max"],
)
def test_each_agents_journal_is_what_its_own_turn_leaves(max_size, before, steps):
    agents = 3
    alone = []
    for p in range(agents):
        memory = filled(max_size, before)
        memory.begin_turn()
        for t in range(steps):
            memory.add(*step(p, t))
        alone.append(memory.end_turn())
    memory = filled(max_size, before)
    view = CohortReplay(memory, agents, steps * N)
    for t in range(steps):
        parts = [step(p, t) for p in range(agents)]
        view.store(joined(parts))
    assert len(view) == min(before + steps * N, max_size)
    for own, theirs in zip(view.journals(), alone, strict=True):
        assert own["written"] == theirs["written"]
        for name in theirs["rows"]:
            assert torch.equal(own["rows"][name], theirs["rows"][name]), name
    assert len(memory) == before  # the buffer itself was only read


@pytest.mark.parametrize(("max_size", "before"), [(60, 0), (60, 30), (24, 24)])
def test_an_agent_samples_the_buffer_and_its_own_rows_only(max_size, before):
    agents, steps = 3, 5
    memory = filled(max_size, before)
    view = CohortReplay(memory, agents, steps * N)
    for t in range(steps):
        parts = [step(p, t) for p in range(agents)]
        view.store(joined(parts))
    generators = [torch.Generator().manual_seed(p) for p in range(agents)]
    drawn = view.rows(view.draw([400] * agents, generators, np.ones(agents, bool)))["obs"]
    drawn = drawn.reshape(agents, 400, 2)
    for p in range(agents):
        writers = set(drawn[p, :, 0].tolist())
        assert writers <= {float(p), -1.0}
        assert float(p) in writers  # its own rows are in its view
        if before and max_size > before + steps * N - N:
            assert -1.0 in writers  # and the generation's buffer


def test_an_agent_draws_what_it_would_draw_alone_and_only_when_it_learns():
    memory = filled(60, 30)
    view = CohortReplay(memory, 2, 30)
    for t in range(4):
        view.store(joined([step(0, t), step(1, t)]))
    generators = [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)]
    first = view.draw([5, 3], generators, np.array([True, False]))
    second = view.draw([5, 3], generators, np.array([True, True]))
    alone = [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)]
    size = 30 + 4 * N
    assert first.shape == second.shape == (2, 5)  # the larger batch: agent 1's padded
    assert torch.equal(first[0], torch.randint(0, size, (5,), generator=alone[0]))
    assert torch.equal(first[1], torch.zeros(5, dtype=torch.int64))  # drew nothing
    assert torch.equal(second[0], torch.randint(0, size, (5,), generator=alone[0]))
    # agent 1 drew nothing in the first round, so its second draw is its stream's first,
    # of its own batch size; padding (row 0) fills its block
    assert torch.equal(second[1, :3], torch.randint(0, size, (3,), generator=alone[1]))
    assert torch.equal(second[1, 3:], torch.zeros(2, dtype=torch.int64))
    # and the rows at those slots are its view's: its own where it wrote them
    rows = view.rows(second)["obs"].reshape(2, 5, 2)
    for p in range(2):
        for row, slot in zip(rows[p].tolist(), second[p].tolist(), strict=True):
            assert row[0] == (p if slot >= 30 else -1.0)
