"""SumTree and PrioritizedReplayBuffer: proportional sampling, IS weights, priorities,
wrap-around, nested observations and checkpoints."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agilerl.components.prioritized_replay import ALPHA, PrioritizedReplayBuffer
from agilerl.components.replay_buffer import FIELDS
from agilerl.components.sum_tree import BRANCHING, SumTree
from agilerl.files import checkpoints
from agilerl.models import PerBufferArgs, ReplayBufferSpec

#: Standard deviations a count may stray from its expectation (two-sided tail ~7e-6 per
#: slot, so a handful of slots together still fail by chance with probability < 1e-4).
Z = 4.5


def _batch(ids, obs_dim=3):
    """Transitions whose every field encodes its id (as in test_replay_buffer)."""
    ids = np.asarray(ids)
    obs = np.repeat(ids[:, None], obs_dim, axis=1).astype(np.float32)
    return obs, ids.astype(np.int64), ids * 0.5, obs + 1000.0, ids % 2 == 0


def _filled(ids, max_size=None, alpha=ALPHA):
    buffer = PrioritizedReplayBuffer(max_size or len(ids), alpha=alpha)
    buffer.add(*_batch(ids))
    return buffer


# -- SumTree ------------------------------------------------------------------------------
@pytest.mark.parametrize("capacity", [1, 5, BRANCHING, BRANCHING + 1, 1500, 40_000])
def test_sum_tree_sums_minima_and_prefix_search_match_numpy(capacity):
    rng = np.random.default_rng(capacity)
    tree = SumTree(capacity)
    assert tree.depth == math.ceil(math.log(capacity, BRANCHING) - 1e-9)
    values = np.zeros(capacity)
    for _ in range(4):  # batched overwrites of random subsets, duplicates included
        index = rng.integers(0, capacity, size=min(capacity + 2, 3000))
        new = rng.uniform(0.1, 3.0, size=index.size)
        tree.update(index, new)
        for i, v in zip(index, new, strict=True):  # last write wins
            values[i] = v
    written = values > 0
    assert tree.total == pytest.approx(values.sum(), rel=1e-12)
    assert tree.min == values[written].min()
    np.testing.assert_array_equal(tree[np.arange(capacity)], values)
    edges = np.cumsum(values)
    u = rng.uniform(0, tree.total, size=1000)
    expected = np.searchsorted(edges, u, side="right")
    np.testing.assert_array_equal(tree.find(u), expected)


def test_sum_tree_search_never_lands_on_a_zero_or_unused_leaf():
    tree = SumTree(6)  # one level of 32 leaves, 26 of them padding
    tree.update([0, 1, 2, 3], [0.0, 2.0, 0.0, 1.0])
    total = tree.total
    at_edges = tree.find([0.0, 2.0, total, total * (1 + 1e-12), np.nextafter(total, 0)])
    np.testing.assert_array_equal(at_edges, [1, 3, 3, 3, 3])
    assert tree.min == 0.0 and tree[[4, 5]].tolist() == [0.0, 0.0]
    # Three levels; zero blocks inside, and values whose sums round (0.1 is inexact).
    capacity = BRANCHING**2 * 3 - 7
    tree = SumTree(capacity)
    values = np.full(capacity, 0.1)
    values[BRANCHING : 3 * BRANCHING] = 0.0  # two whole level-1 nodes
    values[BRANCHING**2 : 2 * BRANCHING**2] = 0.0  # a whole level-2 node
    values[-5:] = 0.0
    tree.update(np.arange(capacity), values)
    edges = np.cumsum(values)
    u = np.concatenate([edges, edges - 1e-15, [tree.total, tree.total * (1 + 1e-9)]])
    found = tree.find(np.clip(u, 0, None))
    assert np.all(values[found] > 0)


def test_sum_tree_refuses_bad_input():
    tree = SumTree(4)
    for index, value, match in (
        ([4], [1.0], r"\[0, 4\)"),
        ([-1], [1.0], r"\[0, 4\)"),
        ([0.5], [1.0], "integers"),
        ([0, 1], [1.0, 2.0, 3.0], "2 indices but 3 values"),
        ([0], [-1.0], "non-negative"),
        ([0], [np.nan], "finite"),
    ):
        with pytest.raises(ValueError, match=match):
            tree.update(index, value)
    with pytest.raises(ValueError, match="all 0"):
        tree.find([0.0])
    with pytest.raises(ValueError, match="capacity"):
        SumTree(0)


# -- sampling -----------------------------------------------------------------------------
def test_sampling_frequencies_follow_the_priorities():
    alpha = 0.6
    buffer = _filled(np.arange(8), alpha=alpha)
    priorities = np.arange(1.0, 9.0)
    buffer.update_priorities(np.arange(8), priorities, prior_eps=0.0)
    probs = priorities**alpha / (priorities**alpha).sum()
    torch.manual_seed(0)
    batches, batch_size = 400, 64
    draws = torch.cat([buffer.sample(batch_size, beta=0.5)["indices"] for _ in range(batches)])
    n = batches * batch_size
    counts = np.bincount(draws.numpy(), minlength=8)
    # Binomial standard deviation of each count under the claimed probabilities; the
    # stratified draw only lowers the spread, so this tolerance is conservative.
    tolerance = Z * np.sqrt(n * probs * (1 - probs))
    assert np.all(np.abs(counts - n * probs) < tolerance), (counts, n * probs, tolerance)
    # The test has power: uniform sampling would be far outside the tolerance.
    assert np.any(np.abs(n / 8 - n * probs) > 3 * tolerance)


def test_samples_are_rows_of_the_drawn_slots():
    buffer = _filled(np.arange(10))
    torch.manual_seed(1)
    sample = buffer.sample(32, beta=0.4)
    assert set(sample) == {*FIELDS, "weights", "indices"}
    ids = sample["indices"]
    assert ids.dtype == torch.int64 and ids.device.type == "cpu"
    assert torch.equal(sample["action"], ids)  # slot i holds id i here
    assert torch.equal(sample["obs"], ids[:, None].float().expand(-1, 3))
    assert sample["weights"].dtype == torch.float32 and sample["weights"].shape == (32,)
    torch.manual_seed(1)
    again = buffer.sample(32, beta=0.4)
    assert all(torch.equal(sample[k], again[k]) for k in ("indices", "weights"))


def test_importance_sampling_weights_equal_the_formula():
    alpha, beta = 0.7, 0.6
    buffer = _filled(np.arange(6), alpha=alpha)
    priorities = np.array([0.5, 1.0, 3.0, 0.2, 2.0, 4.0])
    buffer.update_priorities(np.arange(6), priorities, prior_eps=0.0)
    torch.manual_seed(2)
    sample = buffer.sample(64, beta=beta)
    n = len(buffer)
    prob = priorities**alpha / (priorities**alpha).sum()
    raw = (n * prob) ** -beta
    expected = raw[sample["indices"].numpy()] / raw.max()  # max over every stored slot
    np.testing.assert_allclose(sample["weights"].numpy(), expected, rtol=1e-6)
    assert sample["weights"].max() <= 1.0
    assert torch.all(buffer.sample(16, beta=0.0)["weights"] == 1.0)


def test_alpha_zero_samples_uniformly_whatever_the_priorities():
    buffer = _filled(np.arange(4), alpha=0.0)
    buffer.update_priorities([0, 1, 2, 3], [100.0, 1.0, 1.0, 1.0])
    torch.manual_seed(3)
    n = 8000
    counts = np.bincount(buffer.sample(n)["indices"].numpy(), minlength=4)
    tolerance = Z * np.sqrt(n * 0.25 * 0.75)
    assert np.all(np.abs(counts - n / 4) < tolerance)
    assert torch.all(buffer.sample(8, beta=1.0)["weights"] == 1.0)


# -- priorities ---------------------------------------------------------------------------
def test_update_priorities_adds_prior_eps_and_new_rows_get_the_max_priority():
    buffer = PrioritizedReplayBuffer(10, alpha=0.5)
    buffer.add(*_batch([0, 1, 2]))
    np.testing.assert_array_equal(buffer.priorities(), [1.0, 1.0, 1.0])  # before any update
    errors = torch.tensor([-0.5, 2.0, 0.0])  # |TD error|: the sign does not matter
    buffer.update_priorities(torch.tensor([0, 1, 2]), errors, prior_eps=0.01)
    np.testing.assert_allclose(buffer.priorities(), [0.51, 2.01, 0.01])
    assert buffer.max_priority == pytest.approx(2.01)
    buffer.add(*_batch([3, 4]))  # a vectorised add: both rows at the max priority
    np.testing.assert_allclose(buffer.priorities(), [0.51, 2.01, 0.01, 2.01, 2.01])
    buffer.update_priorities([0, 0], [5.0, 0.2], prior_eps=0.0)  # a slot drawn twice: last wins
    assert buffer.priorities()[0] == 0.2
    assert buffer.max_priority == 5.0  # the largest seen, even if since replaced
    assert buffer._tree.total == pytest.approx((buffer.priorities() ** 0.5).sum())


def test_update_priorities_refuses_bad_input():
    buffer = _filled([0, 1, 2], max_size=8)
    for indices, priorities, kwargs, match in (
        ([3], [1.0], {}, r"\[0, 3\)"),  # slot 3 is not filled yet
        ([-1], [1.0], {}, r"\[0, 3\)"),
        ([0, 1], [1.0], {}, "2 indices but 1 priorities"),
        ([0], [float("nan")], {}, "finite"),
        ([0], [0.0], {"prior_eps": 0.0}, "prior_eps > 0"),
        ([0], [1.0], {"prior_eps": -1.0}, "prior_eps"),
        ([[0]], [1.0], {}, "1-D"),
    ):
        with pytest.raises(ValueError, match=match):
            buffer.update_priorities(indices, priorities, **kwargs)
    np.testing.assert_array_equal(buffer.priorities(), [1.0, 1.0, 1.0])
    for beta in (-0.1, 1.5, True):
        with pytest.raises(ValueError, match="beta"):
            buffer.sample(4, beta=beta)
    with pytest.raises(ValueError, match="alpha"):
        PrioritizedReplayBuffer(4, alpha=2.0)
    with pytest.raises(ValueError, match="empty"):
        PrioritizedReplayBuffer(4).sample(2)


def test_wrap_around_overwrites_the_oldest_slots_at_the_max_priority():
    buffer = PrioritizedReplayBuffer(5, alpha=1.0)
    buffer.add(*_batch([0, 1, 2, 3]))
    buffer.update_priorities([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.4], prior_eps=0.0)
    buffer.add(*_batch([4, 5, 6]))  # fills slot 4, wraps to slots 0 and 1
    assert (len(buffer), buffer.position) == (5, 2)
    np.testing.assert_allclose(buffer.priorities(), [1.0, 1.0, 0.3, 0.4, 1.0])
    torch.manual_seed(4)
    sample = buffer.sample(200)
    by_slot = dict(zip(sample["indices"].tolist(), sample["action"].tolist(), strict=True))
    assert by_slot == {0: 5, 1: 6, 2: 2, 3: 3, 4: 4}  # every slot drawn, holding its row
    assert buffer._tree.total == pytest.approx(3.7)
    buffer.add(*_batch(np.arange(10, 22)))  # larger than the buffer: the last 5 rows kept
    assert sorted(buffer.sample(50)["action"].unique().tolist()) == [17, 18, 19, 20, 21]


def test_dict_and_tuple_observations_are_sampled_with_their_slots():
    buffer = PrioritizedReplayBuffer(6, alpha=1.0)
    ids = np.arange(6)
    obs = {
        "image": np.broadcast_to(ids[:, None, None], (6, 2, 2)).astype(np.uint8),
        "pair": (ids.astype(np.float32), np.stack([ids, -ids], axis=1)),
    }
    next_obs = {"image": obs["image"] + 1, "pair": (obs["pair"][0] + 1, obs["pair"][1] + 1)}
    buffer.add(obs, ids, ids.astype(np.float32), next_obs, np.zeros(6, dtype=bool))
    buffer.update_priorities([5], [50.0])
    torch.manual_seed(5)
    sample = buffer.sample(40)
    slots = sample["indices"]
    assert torch.equal(sample["obs"]["image"][:, 0, 0].long(), slots)
    assert torch.equal(sample["obs"]["pair"][1][:, 1], -slots)
    assert torch.equal(sample["next_obs"]["pair"][0], slots.float() + 1)
    assert (slots == 5).sum() > 20  # the high-priority slot dominates (expected ~36)


def test_defaults_follow_the_replay_buffer_spec():
    assert ALPHA == PerBufferArgs().alpha
    spec = ReplayBufferSpec(max_size=32, per_buffer=True, per_buffer_args={"alpha": 0.8})
    buffer = PrioritizedReplayBuffer.from_spec(spec)
    assert (buffer.max_size, buffer.alpha) == (32, 0.8)


# -- checkpoints --------------------------------------------------------------------------
def test_state_round_trip_through_a_checkpoint_file_keeps_the_priorities(tmp_path):
    buffer = PrioritizedReplayBuffer(8, alpha=0.6)
    buffer.add(*_batch(np.arange(11)))  # wrapped
    buffer.update_priorities([0, 3, 5], [4.0, 0.1, 2.5])
    path = checkpoints.save({"memory": buffer.state_dict()}, tmp_path / "run.ckpt")
    restored = PrioritizedReplayBuffer(8, alpha=0.6)
    restored.load_state_dict(checkpoints.load(path)["memory"])
    np.testing.assert_array_equal(restored.priorities(), buffer.priorities())
    assert restored.max_priority == buffer.max_priority
    for target in (buffer, restored):
        target.add(*_batch([100, 101]))  # new rows at the same max priority
    torch.manual_seed(6)
    expected = buffer.sample(32, beta=0.7)
    torch.manual_seed(6)
    got = restored.sample(32, beta=0.7)
    for key in (*FIELDS, "weights", "indices"):
        assert torch.equal(expected[key], got[key]), key
    empty = PrioritizedReplayBuffer(8, alpha=0.6)
    empty.load_state_dict(PrioritizedReplayBuffer(8, alpha=0.6).state_dict())
    assert len(empty) == 0 and empty.max_priority == 1.0


def test_a_broken_state_is_refused_with_its_key_path_and_changes_nothing():
    source = _filled(np.arange(4), max_size=6)
    source.update_priorities([1], [3.0])

    def broken(**changes):
        state = source.state_dict()
        state.update(changes)
        return state

    nan = torch.tensor([1.0, float("nan"), 1.0, 1.0], dtype=torch.float64)
    cases = (
        (broken(alpha=0.9), r"memory\.alpha: .*0\.9"),
        (broken(priorities=torch.ones(3, dtype=torch.float64)), r"memory\.priorities: shape"),
        (broken(priorities=torch.ones(4)), r"memory\.priorities: dtype"),
        (broken(priorities=nan), r"memory\.priorities: every priority"),
        (broken(max_priority=2.0), r"memory\.max_priority: .*largest"),
        (broken(max_priority="high"), r"memory\.max_priority: expected a number"),
        (
            {k: v for k, v in source.state_dict().items() if k != "buffer"},
            r"memory\.buffer: missing",
        ),
        (
            broken(buffer={**source.state_dict()["buffer"], "max_size": 9}),
            r"memory\.buffer\.max_size",
        ),
    )
    target = _filled([7, 8], max_size=6)
    for state, match in cases:
        with pytest.raises(checkpoints.CheckpointError, match=match):
            target.load_state_dict(state)
        assert len(target) == 2 and target.priorities().tolist() == [1.0, 1.0]
        assert target.sample(4)["action"].min() >= 7
