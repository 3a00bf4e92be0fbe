"""Contextual bandits (issue 14, bandit half), their environment
(agilerl/families/bandits/env.py): the tables and their refusals, the disjoint encoding,
the rewards; and NeuralUCB's and NeuralTS's maths against hand computations. The loop
and learning on scikit-learn's tables: test_loop.py; the trainer's bandit row through
``agilerl train`` (every ``configs/`` bandit manifest, refusals, kill-and-resume, entry
points): test_family.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from gymnasium import spaces
from support.bandits import NET, agent, write

from agilerl.algorithms.neural_ts import NeuralTS
from agilerl.algorithms.neural_ucb import NeuralUCB
from agilerl.families.bandits import BanditEnv, BanditTableError, disjoint_contexts, load_tables
from agilerl.families.bandits.env import MAX_STEP_VALUES


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
