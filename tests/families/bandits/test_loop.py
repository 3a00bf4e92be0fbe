"""The bandit loop (agilerl/families/bandits/loop.py): agents learning every
``learn_step`` pulls on batches from the memory they share, and learning, with sublinear
regret, on the Iris and digits tables scikit-learn ships."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.bandits import NET, agent

from agilerl.algorithms.neural_ts import NeuralTS
from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.families.bandits import BanditEnv
from agilerl.families.bandits.loop import train_bandits
from agilerl.families.bandits.memory import BanditMemory


def test_the_loop_learns_every_learn_step_pulls_on_batches_of_batch_size_from_shared_memory():
    first, env = agent(batch_size=4, learn_step=3)
    second = first.clone(index=1)
    batches: dict[int, list] = {0: [], 1: []}
    for bandit in (first, second):
        inner = bandit.learn
        bandit.learn = lambda batch, inner=inner, seen=batches[bandit.index]: (
            seen.append(batch["context"].shape) or inner(batch)
        )
    memory = BanditMemory(1000)
    train_bandits(env, "t", "NeuralUCB", [first, second], memory, max_steps=60, evo_steps=30,
                  episode_steps=10, eval_steps=5, verbose=False)  # fmt: skip
    # Generation 0: each agent starts from the memory as the generation found it (empty)
    # plus its own pulls (generation-synchronous sharing): it learns once it holds 4, at
    # pulls 6, 9, ..., 30. Generation 1: both find the 60 pulls of generation 0 from the
    # start: at pulls 3, 6, ..., 30.
    for seen in batches.values():
        assert len(seen) == 9 + 10 and set(seen) == {(4, env.context_dim)}
    assert len(memory) == 120  # both agents' pulls of both generations, shared
    assert [point[0] for point in first.regret_curve] == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
    assert len(first.scores) == 6 and first.steps == 60


# --- learning on scikit-learn's tables --------------------------------------------------


def learn(cls, data, steps, seed=0):
    torch.manual_seed(seed)
    features, targets = data
    env = BanditEnv(features, targets)
    bandit = cls(env.observation_space, env.action_space, seed=seed, batch_size=64, net_config=NET)
    pop, fitness = train_bandits(
        env, "table", cls.__name__, [bandit], BanditMemory(steps), max_steps=steps,
        evo_steps=steps, episode_steps=steps // 8, eval_steps=400, verbose=False,
    )  # fmt: skip
    return fitness[0], np.array(pop[0].regret_curve)


def iris():
    from sklearn.datasets import load_iris

    data = load_iris()
    return data.data, data.target


def digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data[:600] / 16.0, data.target[:600]


@pytest.mark.parametrize("cls", [NeuralUCB, NeuralTS])
@pytest.mark.parametrize(("data", "steps", "rate"), [(iris, 1600, 0.9), (digits, 2000, 0.8)])
def test_the_bandits_reach_the_reward_rate_with_sublinear_regret(cls, data, steps, rate):
    pytest.importorskip("sklearn")
    fitness, curve = learn(cls, data(), steps)
    assert fitness >= rate, fitness
    regret = np.diff(np.r_[0.0, curve[:, 1]])  # regret of each eighth of the pulls
    assert curve[-1, 0] == steps and len(regret) == 8
    first, last = regret[:2].sum(), regret[-2:].sum()
    assert last < 0.35 * first, regret  # regret grows clearly sublinearly
