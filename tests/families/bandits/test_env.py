"""Contextual bandits (issue 14, bandit half): the tables and their refusals, the disjoint
encoding, NeuralUCB's and NeuralTS's maths against hand computations, learning on the
Iris and digits tables scikit-learn ships, the trainer's bandit row through
``agilerl train`` (every ``configs/`` bandit manifest, refusals, kill-and-resume)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from gymnasium import spaces
from support import ROOT

from agilerl.algorithms.neural_ts import NeuralTS
from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.cli import main
from agilerl.families.bandits import BanditEnv, BanditTableError, disjoint_contexts, load_tables
from agilerl.families.bandits.env import MAX_STEP_VALUES
from agilerl.families.bandits.loop import train_bandits
from agilerl.families.bandits.memory import BanditMemory

NET = {
    "latent_dim": 32,
    "encoder_config": {"hidden_size": [64]},
    "head_config": {"hidden_size": [64]},
}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def tables(tmp_path, features="a,b\n1,2\n3,4\n5,6\n", targets="label\nx\ny\nx\n"):
    return write(tmp_path / "f.csv", features), write(tmp_path / "t.csv", targets)


# --- tables -----------------------------------------------------------------------------


def test_csv_tables_load_as_numbers_and_labels(tmp_path):
    features, labels = load_tables(*tables(tmp_path))
    assert features.dtype == np.float32 and features.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert labels.tolist() == ["x", "y", "x"]


def test_parquet_tables_load_like_csv(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"a": [1.0, 3.0], "b": [2.0, 4.0]}), tmp_path / "f.parquet")
    pq.write_table(pa.table({"label": [0, 1]}), tmp_path / "t.pq")
    features, labels = load_tables(tmp_path / "f.parquet", tmp_path / "t.pq")
    assert features.tolist() == [[1, 2], [3, 4]] and labels.tolist() == ["0", "1"]


REFUSALS = {
    "missing features": (None, "label\nx\n", "f.csv: features table not found"),
    "missing targets": ("a\n1\n", None, "t.csv: targets table not found"),
    "row counts differ": (
        "a,b\n1,2\n3,4\n5,6\n",
        "label\nx\ny\n",
        "f.csv has 3 rows and {t} 2: one target per row of features; {t}:4 is the first row "
        "missing",
    ),
    "non-numeric feature": (
        "a,b\n1,2\n3,tall\n",
        "l\nx\ny\n",
        "f.csv:3: column 'b': 'tall' is not a number",
    ),
    "NaN feature": (
        "a,b\n1,nan\n3,4\n",
        "l\nx\ny\n",
        "f.csv:2: column 'b': nan is not usable (not a number)",
    ),
    "infinite feature": (
        "a,b\n1,2\n3,4\n-inf,5\n",
        "l\nx\ny\nx\n",
        "f.csv:4: column 'a': -inf is not usable (infinite)",
    ),
    "feature overflowing float32": (
        "a,b\n1,2\n3,1e39\n",
        "l\nx\ny\n",
        "f.csv:3: column 'b': 1e+39 is not usable (magnitude above 1.84e+19, whose square "
        "overflows float32)",
    ),
    "feature scaled by 1e30": (
        "a,b\n1e30,2\n3,4\n",
        "l\nx\ny\n",
        "f.csv:2: column 'a': 1e+30 is not usable (magnitude above",
    ),
    "one label": (
        "a\n1\n2\n3\n",
        "l\nsetosa\nsetosa\n setosa\n",
        "{t}: every row has the label 'setosa': a bandit needs at least 2 distinct labels",
    ),
    "short row": ("a,b\n1,2\n3\n", "l\nx\ny\n", "f.csv:3: 1 values, the header has 2"),
    "two target columns": ("a\n1\n2\n", "l,m\nx,1\ny,2\n", "t.csv: 2 columns (l, m)"),
    "empty label": ("a\n1\n2\n", "l\nx\n \n", "t.csv:3: no target label"),
    "no rows": ("a,b\n", "l\n", "f.csv: no rows below the header"),
    "empty file": ("", "l\nx\n", "f.csv: empty table"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_each_bad_table_is_refused_naming_the_file_and_row(case, tmp_path):
    features, targets, message = REFUSALS[case]
    f, t = tmp_path / "f.csv", tmp_path / "t.csv"
    if features is not None:
        write(f, features)
    if targets is not None:
        write(t, targets)
    with pytest.raises(BanditTableError) as err:
        load_tables(f, t)
    assert message.format(t=t) in str(err.value)


def test_a_nan_in_a_parquet_table_is_refused_at_its_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(
        pa.table({"a": [1.0, 3.0, 5.0], "b": [2.0, float("nan"), 6.0]}), tmp_path / "f.pq"
    )
    pq.write_table(pa.table({"label": [0, 1, 0]}), tmp_path / "t.pq")
    with pytest.raises(BanditTableError) as err:
        load_tables(tmp_path / "f.pq", tmp_path / "t.pq")
    assert (
        str(err.value)
        == f"{tmp_path / 'f.pq'}: row 1: column 'b': nan is not usable (not a number)"
    )


def test_a_table_of_another_kind_or_a_broken_parquet_file_is_refused(tmp_path):
    with pytest.raises(BanditTableError, match=r"f\.txt: features must be a \.csv"):
        load_tables(write(tmp_path / "f.txt", "a\n1\n"), write(tmp_path / "t.csv", "l\nx\n"))
    pytest.importorskip("pyarrow")
    with pytest.raises(BanditTableError, match=r"f\.parquet: not a readable Parquet file"):
        load_tables(write(tmp_path / "f.parquet", "not parquet"), tmp_path / "t.csv")


@pytest.mark.parametrize("at", [10, 70_000], ids=["first-block", "a-later-block"])
def test_a_csv_that_is_not_utf8_is_refused_naming_line_and_byte(tmp_path, at):
    """The text layer decodes in blocks of 8 KiB: the byte is found in any of them."""
    rows = "".join(f"{i},{i}\n" for i in range(at // 4))
    data = ("a,b\n" + rows).encode() + b"7,\xff\n"
    f = tmp_path / "f.csv"
    f.write_bytes(data)
    targets = write(tmp_path / "t.csv", "label\n" + "x\n" * (rows.count("\n") + 1))
    with pytest.raises(BanditTableError) as err:
        load_tables(f, targets)
    offset = data.index(b"\xff")
    line = data[:offset].count(b"\n") + 1
    assert str(err.value) == f"{f}:{line}: not UTF-8 text (byte 0xff at offset {offset})"


def test_a_csv_field_over_the_csv_limit_is_refused_naming_the_line(tmp_path):
    f = write(tmp_path / "f.csv", "a,b\n1,2\n3," + "4" * 131_073 + "\n")
    with pytest.raises(BanditTableError) as err:
        load_tables(f, write(tmp_path / "t.csv", "label\nx\ny\n"))
    assert str(err.value) == f"{f}:3: field larger than field limit (131072)"


def test_a_table_of_too_many_arms_is_refused_before_any_step(tmp_path):
    """3,000 arms: 36 million context values per step (the disjoint encoding is
    quadratic in the arms), which hung the run."""
    arms = 3_000
    write(tmp_path / "f.csv", "a,b,c,d\n" + "1,2,3,4\n" * arms)
    t = write(tmp_path / "t.csv", "label\n" + "".join(f"c{i}\n" for i in range(arms)))
    spec = type("Spec", (), {"features": "f.csv", "targets": "t.csv", "name": "many"})
    with pytest.raises(BanditTableError) as err:
        BanditEnv.from_spec(spec, tmp_path)
    assert str(err.value) == (
        f"{t}: 3,000 distinct labels make 3,000 arms; with 4 features each step would build "
        "and score 3,000 contexts of 12,000 values (36,000,000 in all: the disjoint encoding "
        f"grows with the square of the arms), more than the {MAX_STEP_VALUES:,} a step may have"
    )
    # 1,000 arms of 4 features are within the bound
    assert BanditEnv(np.ones((1_000, 4)), np.arange(1_000)).num_arms == 1_000


# --- the environment --------------------------------------------------------------------


def test_disjoint_encoding_places_the_row_in_each_arms_block():
    contexts = disjoint_contexts(np.array([1.0, 2.0]), 3)
    assert contexts.tolist() == [
        [1, 2, 0, 0, 0, 0],
        [0, 0, 1, 2, 0, 0],
        [0, 0, 0, 0, 1, 2],
    ]


def test_the_bandit_pays_one_for_the_rows_class_only_and_is_seeded():
    features = np.arange(12, dtype=np.float32).reshape(6, 2)
    env = BanditEnv(features, ["b", "a", "c", "a", "b", "c"])
    assert env.arms.tolist() == ["a", "b", "c"]  # arms: the sorted labels
    assert env.observation_space.shape == (6,) and env.action_space.n == 3
    contexts = env.reset(seed=3)
    for _ in range(20):
        row = contexts[0, :2]  # arm 0's block holds the row
        index = int(np.flatnonzero((features == row).all(axis=1))[0])
        correct = env.labels[index]
        assert (contexts == disjoint_contexts(features[index], 3)).all()
        contexts, reward = env.step(int(correct))
        assert reward == 1.0
    first = [env.reset(seed=7)[0].tolist()] + [env.step(0)[0][0].tolist() for _ in range(5)]
    again = [env.reset(seed=7)[0].tolist()] + [env.step(1)[0][0].tolist() for _ in range(5)]
    assert first == again  # the rows drawn depend on the seed alone, not the arms pulled


def test_a_wrong_arm_pays_nothing_and_an_unknown_arm_is_refused():
    env = BanditEnv(np.ones((1, 2)), [5])
    env.reset(seed=0)
    assert env.step(0)[1] == 1.0
    env = BanditEnv(np.ones((2, 2)), [0, 1])
    env.reset(seed=0)
    wrong = 1 - env.correct_arm
    assert env.step(wrong)[1] == 0.0
    with pytest.raises(ValueError, match="not an arm"):
        env.step(2)


# --- the maths --------------------------------------------------------------------------


def agent(cls=NeuralUCB, arms=3, dim=2, **kwargs):
    torch.manual_seed(0)
    env = BanditEnv(np.random.default_rng(0).normal(size=(30, dim)), np.arange(30) % arms)
    kwargs.setdefault("net_config", NET)
    return cls(env.observation_space, env.action_space, seed=0, **kwargs), env


@pytest.mark.parametrize("activation", [None, "Tanh"])  # linear output, and one through tanh
def test_gradient_features_are_the_output_layers_gradient_over_sqrt_width(activation):
    head = {"hidden_size": [8], "output_activation": activation}
    bandit, env = agent(net_config={**NET, "head_config": head})
    contexts = env.reset(seed=0)
    mean, grads = bandit.features(contexts)
    out = bandit.actor.head.out
    for k in range(3):
        x = torch.as_tensor(contexts[k : k + 1])
        f = bandit.actor(x).reshape(())
        w, b = torch.autograd.grad(f, [out.weight, out.bias])
        hand = torch.cat([w.flatten(), b]).double() / math.sqrt(out.in_features)
        assert torch.allclose(grads[k], hand, atol=1e-6)
        assert mean[k].item() == pytest.approx(f.item(), abs=1e-6)
    assert grads.shape == (3, out.in_features + 1) == (3, bandit.feature_dim)


def test_the_incremental_inverse_equals_the_direct_inverse_of_the_design_matrix():
    bandit, env = agent(lamb=0.5)
    p = bandit.feature_dim
    assert torch.allclose(bandit.sigma_inv, torch.eye(p, dtype=torch.float64) / 0.5)
    pulled = []
    for _ in range(40):
        contexts = env.reset(seed=len(pulled))
        _, grads = bandit.features(contexts)
        arm = bandit.explore(contexts)
        pulled.append(grads[arm])
    design = 0.5 * torch.eye(p, dtype=torch.float64) + sum(torch.outer(g, g) for g in pulled)
    assert torch.allclose(bandit.sigma_inv, torch.linalg.inv(design), atol=1e-9)
    g = pulled[0]
    assert bandit.sigma(g[None])[0].item() == pytest.approx(
        math.sqrt(g @ torch.linalg.inv(design) @ g), rel=1e-9
    )


def test_ucb_pulls_the_highest_mean_plus_gamma_sigma():
    bandit, _ = agent(NeuralUCB, gamma=0.5)
    mean = torch.tensor([0.2, 0.5, 0.4], dtype=torch.float64)
    sigma = torch.tensor([1.0, 0.0, 0.3], dtype=torch.float64)
    assert bandit.score(mean, sigma).tolist() == pytest.approx([0.7, 0.5, 0.55])
    bandit.gamma = 0.0  # no exploration: the greedy arm
    assert int(torch.argmax(bandit.score(mean, sigma))) == 1


def test_ts_samples_each_arm_from_normal_mean_and_gamma_sigma():
    bandit, _ = agent(NeuralTS, gamma=0.5)
    mean = torch.tensor([0.2, 0.5, 0.4], dtype=torch.float64)
    sigma = torch.tensor([1.0, 0.0, 0.3], dtype=torch.float64)
    twin = np.random.default_rng()  # the agent's generator, copied: the same draws
    twin.bit_generator.state = bandit.rng.bit_generator.state
    z = torch.as_tensor(twin.standard_normal(3))
    assert bandit.score(mean, sigma).tolist() == pytest.approx((mean + 0.5 * sigma * z).tolist())
    draws = torch.stack([bandit.score(mean, sigma) for _ in range(4000)])
    assert draws.mean(0).tolist() == pytest.approx(mean.tolist(), abs=0.03)
    assert draws.std(0).tolist() == pytest.approx((0.5 * sigma).tolist(), abs=0.02)


def squared_distance(params, anchor):
    """``||theta - theta_0||^2`` by hand."""
    return sum(
        float(((p.detach() - p0.detach()) ** 2).sum()) for p, p0 in zip(params, anchor, strict=True)
    )


def test_the_loss_is_reward_mse_plus_reg_times_the_distance_to_theta_0():
    bandit, env = agent(reg=0.25, lr=0.0)
    with torch.no_grad():
        for p in bandit.actor.parameters():
            p.add_(0.1)
    batch = {"context": torch.as_tensor(env.reset(seed=0)), "reward": torch.tensor([1.0, 0.0, 0.0])}
    pred = bandit.actor(batch["context"]).reshape(-1).detach()
    mse = float(((pred - batch["reward"]) ** 2).mean())
    distance = squared_distance(bandit.actor.parameters(), bandit.actor_initial.parameters())
    metrics = bandit.learn(batch)
    assert metrics["reward_mse"] == pytest.approx(mse, rel=1e-5)
    assert metrics["loss"] == pytest.approx(mse + 0.25 * distance, rel=1e-5)


def test_learning_never_moves_theta_0_and_reg_pulls_towards_it():
    far = {}
    for reg in (0.0, 10.0):
        bandit, env = agent(reg=reg, lr=1e-2)
        initial = [p.detach().clone() for p in bandit.actor_initial.parameters()]
        batch = {
            "context": torch.as_tensor(env.reset(seed=0)),
            "reward": torch.tensor([5.0, 5.0, 5.0]),
        }
        for _ in range(30):
            bandit.learn(batch)
        assert all(
            torch.equal(a, b)
            for a, b in zip(initial, bandit.actor_initial.parameters(), strict=True)
        )
        far[reg] = squared_distance(bandit.actor.parameters(), initial)
    assert far[10.0] < 0.5 * far[0.0]


@pytest.mark.parametrize("cls", [NeuralUCB, NeuralTS])
def test_a_stacked_update_is_each_bandits_own_learn_and_never_moves_theta_0(cls):
    """Three bandits (their own anchors, ``reg`` and ``lr``) learning on one stacked view:
    each agrees with its own ``learn`` on its rows, to float rounding (the stacked Adam's
    kernels), and every anchor theta_0 stays bit-equal (it is no polyak target)."""
    from agilerl.cohorts.views import StackedPopulation

    contexts, arms = spaces.Box(-1.0, 1.0, (6,)), spaces.Discrete(3)

    def made() -> list:
        torch.manual_seed(0)  # three different initial networks, so three anchors
        settings = zip([0.0, 0.5, 2.0], [1e-2, 3e-2, 5e-2], strict=True)
        return [
            cls(contexts, arms, index=i, seed=i, net_config=NET, batch_size=4, reg=reg, lr=lr)
            for i, (reg, lr) in enumerate(settings)
        ]

    alone, together = made(), made()
    anchors = [[p.detach().clone() for p in a.actor_initial.parameters()] for a in together]
    generator = torch.Generator().manual_seed(0)
    for step in range(5):
        batches = [
            {"context": torch.rand(4, 6, generator=generator), "reward": torch.rand(4, generator=generator)}
            for _ in alone
        ]  # fmt: skip
        expected = [agent.learn(batch) for agent, batch in zip(alone, batches, strict=True)]
        view = StackedPopulation(together)
        joined = {key: torch.cat([b[key] for b in batches]) for key in batches[0]}
        got = view.template.update(view, joined)
        view.write_back()
        for e, g in zip(expected, got, strict=True):
            assert g is not None and g.keys() == e.keys()
            for name in e:
                assert g[name] == pytest.approx(e[name], rel=1e-4, abs=1e-6), (step, name)
    for a, b, anchor in zip(alone, together, anchors, strict=True):
        for x, y in zip(a.actor.parameters(), b.actor.parameters(), strict=True):
            torch.testing.assert_close(x, y, rtol=1e-4, atol=1e-5)
        for x, y in zip(anchor, b.actor_initial.parameters(), strict=True):
            assert torch.equal(x, y)
        assert squared_distance(b.actor.parameters(), anchor) > 0  # it learned


def test_an_architecture_mutation_restarts_the_inverse_design_matrix_at_its_new_size():
    bandit, env = agent()
    bandit.explore(env.reset(seed=0))
    assert not torch.allclose(bandit.sigma_inv, bandit._prior())
    bandit.mutate_architecture("head.add_node", 3)
    assert bandit.sigma_inv.shape == (bandit.feature_dim,) * 2
    assert torch.equal(bandit.sigma_inv, bandit._prior())


def test_a_mutated_lamb_takes_effect_in_the_design_matrix():
    bandit, env = agent(lamb=1.0, hp_config={"lamb": {"min": 0.1, "max": 10.0}})
    bandit.hp_config = {"lamb": bandit.hp_config["lamb"]}  # the only one to mutate
    pulled = []
    for seed in range(5):
        contexts = env.reset(seed=seed)
        _, grads = bandit.features(contexts)
        pulled.append(grads[bandit.explore(contexts)])
    name, old, new = bandit.mutate_hyperparameter(np.random.default_rng(0))
    assert name == "lamb" and new != old == 1.0
    eye = torch.eye(bandit.feature_dim, dtype=torch.float64)
    design = new * eye + sum(torch.outer(g, g) for g in pulled)
    assert torch.allclose(bandit.sigma_inv, torch.linalg.inv(design), atol=1e-9)


def test_a_checkpoint_brings_back_the_posterior_and_the_regret(tmp_path):
    bandit, env = agent(NeuralTS)
    for _ in range(5):
        bandit.explore(env.reset(seed=1))
    bandit.regret, bandit.regret_curve = 3.0, [[5.0, 3.0]]
    bandit.save_checkpoint(tmp_path / "a.pt")
    again = NeuralTS.load(tmp_path / "a.pt")
    assert torch.equal(again.sigma_inv, bandit.sigma_inv)
    assert again.regret == 3.0 and again.regret_curve == [[5.0, 3.0]]
    contexts = env.reset(seed=2)
    assert again.explore(contexts) == bandit.explore(contexts)  # same posterior, same draws


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


# --- the trainer: agilerl train ---------------------------------------------------------

BRIEF = ["--set", "training.max_steps=60", "--set", "training.evo_steps=30",
         "--set", "training.eval_steps=20", "--set", "algorithm.batch_size=8",
         "--set", "training.pop_size=2", "--set", "training.seed=3"]  # fmt: skip


def train(capsys, manifest, out, *args):
    rc = main(["train", str(manifest), "--out", str(out), *args])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("name", ["neural_ucb", "neural_ts"])
def test_each_bandit_manifest_trains_briefly_through_agilerl_train(name, tmp_path, capsys):
    rc, err = train(capsys, ROOT / "configs" / f"{name}.yaml", tmp_path, *BRIEF)
    assert rc == 0, err
    # The table speaks the bandit's terms, and shows the reward rate once.
    head = next(line for line in err.splitlines() if line.lstrip().startswith("agent "))
    assert "train reward rate" in head and "regret" in head and "reward_rate" not in head
    for output in ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png",
                   "history.json", "checkpoint.pt", "regret.png"):  # fmt: skip
        assert (tmp_path / output).is_file(), output
    history = json.loads((tmp_path / "history.json").read_text())
    assert len(history) == 2
    for agent in history[-1]["agents"]:
        assert 0.0 <= agent["fitness"] <= 1.0 and agent["metrics"]["regret"] >= 0
    written = (tmp_path / "manifest.yaml").read_text()
    assert str(ROOT / "configs" / "data" / "iris_features.csv") in written  # absolute now
    # agilerl evaluate pulls greedily on the tables the agent file records (absolute paths)
    args = ["evaluate", str(tmp_path / "best_agent.pt"), "--episodes", "2"]
    assert main([*args, "--max-episode-steps", "50", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["episodes"] == 2 and all(0.0 <= r <= 1.0 for r in report["returns"])


def bandit_manifest(tmp_path, **environment):
    text = (ROOT / "configs" / "neural_ucb.yaml").read_text()
    data = ROOT / "configs" / "data"
    text = text.replace(
        "data/iris_features.csv", str(environment.get("features", data / "iris_features.csv"))
    )
    text = text.replace(
        "data/iris_targets.csv", str(environment.get("targets", data / "iris_targets.csv"))
    )
    return write(tmp_path / "bandit.yaml", text)


TRAIN_REFUSALS = {
    "missing table": ({"features": "nowhere.csv"}, [], "nowhere.csv: features table not found"),
    "row counts differ": ({"targets": "short.csv"}, [], "short.csv:3 is the first row missing"),
    "one label": ({"targets": "one.csv"}, [], "one.csv: every row has the label 'setosa'"),
    "epsilon-greedy": ({}, ["--set", "training.eps_start=0.5"], "training.eps_start"),
    "learning delay": ({}, ["--set", "training.learning_delay=10"], "training.learning_delay"),
    "uniform warm-up": (
        {},
        ["--set", "training.warmup_actions=uniform"],
        "training.warmup_actions",
    ),
    "batch beyond memory": ({}, ["--set", "replay_buffer.max_size=4"], "algorithm.batch_size"),
    "summed-reward target": ({}, ["--set", "training.target_score=96"], "training.target_score"),
}


@pytest.mark.parametrize("case", sorted(TRAIN_REFUSALS))
def test_each_run_refusal_names_its_cause_before_the_first_step(case, tmp_path, capsys):
    environment, args, message = TRAIN_REFUSALS[case]
    write(tmp_path / "short.csv", "species\nsetosa\n")
    write(tmp_path / "one.csv", "species\n" + "setosa\n" * 150)  # as many rows as iris
    environment = {k: tmp_path / v for k, v in environment.items()}
    manifest = bandit_manifest(tmp_path, **environment)
    rc, err = train(capsys, manifest, tmp_path / "out", *BRIEF, *args)
    assert rc == 1, err
    assert "Traceback" not in err
    assert message in err[err.index("agilerl: ") :], err
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


@pytest.mark.parametrize(
    "name",
    [
        "configs/bandit/neural_ucb",
        "configs/bandit/neural_ts",
        "configs/bandit/neural_ucb_mfpbt",
        "tests/neural_ucb",  # replay_buffer.memory_size: AgileRL's old spelling
        "tests/neural_ts",  # (the same)
    ],
)
def test_agilerls_own_bandit_manifests_train_with_a_rate_target(name, tmp_path):
    """AgileRL's bandit manifests as written, but for the budget and the target (theirs
    sums rewards over eval_steps: 96 and 450), with their tables where they name them
    (tests/data/, relative to where the run starts)."""
    import shutil

    from agilerl.files.documents import load_document
    from agilerl.models.manifest import parse_manifest
    from agilerl.trainer import LocalTrainer

    data, _ = load_document(ROOT / "tests" / "agilerl_manifests" / f"{name}.yaml")
    (tmp_path / "tests" / "data").mkdir(parents=True)
    for table in ("iris_features.csv", "iris_targets.csv"):
        shutil.copy(ROOT / "configs" / "data" / table, tmp_path / "tests" / "data" / table)
    data["training"].update(max_steps=40, evo_steps=20, eval_steps=20, target_score=0.99, seed=0)
    data["algorithm"]["batch_size"] = 8
    trainer = LocalTrainer.from_manifest(parse_manifest(data), base_dir=tmp_path)
    population, fitnesses = trainer.train(verbose=False)
    assert len(population) == trainer.training.pop_size and all(0 <= f <= 1 for f in fitnesses)
    assert trainer.state.finished in ("max_steps", "target_score")


def test_a_memory_beyond_the_machine_is_refused_with_the_figures():
    from agilerl.trainer import LocalTrainer
    from agilerl.training.preflight import PreflightError

    trainer = LocalTrainer.from_manifest(ROOT / "configs" / "neural_ucb.yaml")
    found = trainer.preflight(available=10**9)  # 100,000 pulls of 52 B fit
    assert [n.field for n in found.needs] == ["training.pop_size", "replay_buffer.max_size"]
    assert found.needs[1].bytes == 100_000 * (4 * 12 + 4)
    with pytest.raises(PreflightError, match=r"replay_buffer.max_size: 100,000 pulls of 52 B"):
        trainer.preflight(available=10**6)


@pytest.mark.slow
def test_a_killed_bandit_run_resumes_where_it_stood(tmp_path, capsys):
    """Killed at its first checkpoint and resumed, a NeuralTS run gives the fitnesses
    and regrets an uninterrupted run gives (agents, posteriors, memory, RNG came back)."""
    from support.killed_runs import kill_at_first_checkpoint

    steps = [*BRIEF, "--set", "training.max_steps=90", "--quiet"]
    manifest = ROOT / "configs" / "neural_ts.yaml"
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert train(capsys, manifest, whole, *steps)[0] == 0
    command = [
        sys.executable,
        "-m",
        "agilerl.cli",
        "train",
        str(manifest),
        "--out",
        str(killed),
        *steps,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    kill_at_first_checkpoint(command, killed / "checkpoint.pt", env)
    assert not (killed / "history.json").exists()  # it did not finish
    result = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "resumed from" in result.stdout  # in the one line of --quiet

    def figures(run):
        history = json.loads((run / "history.json").read_text())
        return [[(a["fitness"], a["metrics"]["regret"]) for a in g["agents"]] for g in history]

    assert len(figures(whole)) == 3
    assert figures(killed) == figures(whole)


# --- a bandit from an entry point --------------------------------------------------------

ENTRY = '''
import numpy as np

from agilerl.families.bandits import BanditEnv


def make_bandit(rows=200):
    """A table built in code: the class is the sign of the first feature."""
    features = np.random.default_rng(0).normal(size=(rows, 3)).astype(np.float32)
    return BanditEnv(features, np.where(features[:, 0] > 0, "up", "down"), name="signs")


def not_a_bandit():
    return "a table"
'''


def entry_manifest(tmp_path, environment: str) -> Path:
    text = (ROOT / "configs" / "neural_ucb.yaml").read_text()
    start, end = text.index("environment:\n"), text.index("network:\n")
    return write(tmp_path / "bandit.yaml", text[:start] + environment + text[end:])


def test_a_bandit_from_an_entry_point_validates_trains_and_evaluates_from_elsewhere(
    tmp_path, capsys, monkeypatch
):
    write(tmp_path / "bandits.py", ENTRY)
    manifest = entry_manifest(
        tmp_path,
        "environment:\n  name: signs\n  entrypoint: bandits.py:make_bandit\n"
        "  config: {rows: 120}\n",
    )
    assert main(["validate", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "environment.entrypoint -> bandits.py:make_bandit" in out, out
    rc, err = train(capsys, manifest, tmp_path / "run", *BRIEF)
    assert rc == 0, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the recorded path finds bandits.py from anywhere
    agent = str(tmp_path / "run" / "best_agent.pt")
    args = ["evaluate", agent, "--episodes", "2", "--max-episode-steps", "50"]
    assert main([*args, "--trust-agent-code", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["returns"]) == 2 and all(0 <= r <= 1 for r in result["returns"])


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        (
            "environment:\n  entrypoint: bandits.py:make_bandit\n  features: f.csv\n",
            "environment.features: the bandit comes from environment.entrypoint",
        ),
        (
            "environment:\n  name: IRIS\n",
            "environment.features: a contextual bandit manifest names both tables",
        ),
    ],
)
def test_a_bandit_manifest_names_its_tables_or_an_entry_point_not_both(
    environment, message, tmp_path, capsys
):
    manifest = entry_manifest(tmp_path, environment)
    assert main(["validate", str(manifest)]) == 1
    assert message in capsys.readouterr().err


def test_an_entry_point_that_returns_no_bandit_is_refused_before_the_first_step(tmp_path, capsys):
    write(tmp_path / "bandits.py", ENTRY)
    manifest = entry_manifest(tmp_path, "environment:\n  entrypoint: bandits.py:not_a_bandit\n")
    rc, err = train(capsys, manifest, tmp_path / "run", *BRIEF)
    assert rc == 1 and "Traceback" not in err
    assert "environment.entrypoint: bandits.py:not_a_bandit returned a str, not a BanditEnv" in err
    assert not (tmp_path / "run" / "best_agent.pt").exists()


# --- one label: the same refusal from every source ----------------------------------------

ONE_ARM = (
    "every row has the label {label}: a bandit needs at least 2 distinct labels (one arm per "
    "label), and with one the only arm always pays"
)

ZEROS = """
import numpy as np

from agilerl.families.bandits import BanditEnv


def make():
    return BanditEnv(np.ones((200, 4)), np.zeros(200))
"""


#: 200 rows whose labels are all 0.
ONE_LABEL = (np.random.default_rng(0).normal(size=(200, 4)), np.zeros(200))
BUDGET = {"max_steps": 60, "evo_steps": 30, "eval_steps": 20, "pop_size": 2, "seed": 0}


def one_label_tables(tmp_path: Path) -> dict[str, str]:
    features, targets = ONE_LABEL
    rows = "".join(",".join(f"{v:.6f}" for v in row) + "\n" for row in features)
    write(tmp_path / "f.csv", "a,b,c,d\n" + rows)
    write(tmp_path / "t.csv", "label\n" + "".join(f"{t:g}\n" for t in targets))
    return {"features": str(tmp_path / "f.csv"), "targets": str(tmp_path / "t.csv")}


def one_label_entry_point(tmp_path: Path) -> dict[str, str]:
    write(tmp_path / "zeros.py", ZEROS)
    return {"entrypoint": "zeros:make", "path": str(tmp_path)}


#: Each source of the one-label table -> the run's arguments, where its refusal names,
#: the label as that source gives it (CSV labels are text).
ONE_LABEL_SOURCES = {
    "tables": (
        lambda tmp: {"environment": one_label_tables(tmp)},
        "environment: {tmp}/t.csv",
        "'0'",
    ),
    "env=": (lambda tmp: {"env": BanditEnv(*ONE_LABEL)}, "env: BanditEnv", "0.0"),
    "entrypoint": (
        lambda tmp: {"environment": one_label_entry_point(tmp)},
        "environment.entrypoint: zeros:make",
        "0.0",
    ),
}


@pytest.mark.parametrize("source", sorted(ONE_LABEL_SOURCES))
def test_a_bandit_of_one_label_is_refused_from_tables_from_env_and_from_an_entry_point(
    source, tmp_path
):
    """A one-arm bandit pays every pull (fitness 1.0, nothing learned): the tables, an
    object given in Python and an entry point's bandit meet one check, one reason."""
    from agilerl.trainer import LocalTrainer
    from agilerl.training.preflight import PreflightError

    arguments, where, label = ONE_LABEL_SOURCES[source]
    trainer = LocalTrainer("NeuralUCB", training=BUDGET, **arguments(tmp_path))
    out = tmp_path / "run"
    with pytest.raises(PreflightError) as err:
        trainer.train(verbose=False, output_dir=out)
    expected = f"{where.format(tmp=tmp_path)}: {ONE_ARM.format(label=label)}"
    assert str(err.value) == expected
    assert not out.exists()  # refused before anything was written
