"""When an off-policy agent learns in its turn (``LearningRounds``): every ``learn_step``
of its env steps counted from the turn's start, none before the buffer serves its batch
(and no backlog of them after), so agents of one cohort with equal ``learn_step`` learn
in whole rounds whatever their batch sizes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from agilerl.training.rounds import LearningRounds


def agent(learn_step, batch_size):
    return SimpleNamespace(learn_step=learn_step, batch_size=batch_size)


def test_an_agent_learns_every_learn_step_once_it_can():
    rounds = LearningRounds([agent(16, 20)], per_step=8, learning_delay=0)
    learnt = [len(rounds.after_step(rows)) for rows in range(8, 81, 8)]
    # 8 env steps a vector step, one round per 16, none before 20 rows (and none owed)
    assert learnt == [0, 0, 0, 1, 0, 1, 0, 1, 0, 1]


def test_learning_delay_holds_learning_back():
    rounds = LearningRounds([agent(8, 4)], per_step=8, learning_delay=24)
    assert [len(rounds.after_step(rows)) for rows in (8, 16, 24, 32, 40)] == [0, 0, 0, 1, 1]


def test_several_rounds_in_one_step_when_learn_step_is_smaller():
    rounds = LearningRounds([agent(2, 1), agent(8, 1)], per_step=8, learning_delay=0)
    masks = rounds.after_step(8)
    assert len(masks) == 4
    assert [m.tolist() for m in masks] == [[True, True], [True, False], [True, False],
                                           [True, False]]  # fmt: skip


def test_agents_of_other_batch_sizes_learn_in_the_same_rounds():
    """Batch sizes 102 and 128 (an HPO mutation): the agents become ready at different
    steps, then learn at the same ones, so a cohort's rounds stay whole."""
    rounds = LearningRounds([agent(16, 102), agent(16, 128)], per_step=8, learning_delay=0)
    live = []
    for rows in range(8, 8 * 40 + 1, 8):
        for mask in rounds.after_step(rows):
            live.append(mask.tolist())
    assert [True, False] in live  # the smaller batch starts first
    whole = live[live.index([True, True]) :]
    assert whole and all(mask == [True, True] for mask in whole)
    assert np.array_equal(rounds.learning(120), [True, False])
