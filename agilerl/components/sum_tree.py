"""``SumTree``: the priorities of a prioritised replay buffer, summed for sampling.

A complete binary tree over ``capacity`` leaves (rounded up to a power of two) kept in
two flat numpy arrays: node ``i`` has children ``2i`` and ``2i + 1``, the root is node 1
and leaf ``j`` is node ``leaves + j``. One array holds sums (what proportional sampling
walks down), the other minima (the smallest priority gives the largest importance-sampling
weight, which normalises them). Unused leaves hold 0 in the sum tree and +inf in the
min tree, so they are never sampled and never the minimum.

Everything is batched: :meth:`SumTree.update` writes any number of leaves and then
recomputes the affected parents one *level* at a time (``log2(capacity)`` numpy
operations whatever the batch size), and :meth:`SumTree.find` walks a whole batch of
prefix sums down the tree together. Parents are recomputed from their children rather
than adjusted by deltas, so rounding errors never accumulate over a long run.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class SumTree:
    """Sums and minima of ``capacity`` non-negative float64 values (see module docstring)."""

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.capacity = int(capacity)
        self.leaves = 1 << (self.capacity - 1).bit_length()  # next power of two
        self.depth = self.leaves.bit_length() - 1  # edges from the root to a leaf
        self._sum = np.zeros(2 * self.leaves)
        self._min = np.full(2 * self.leaves, np.inf)

    @property
    def total(self) -> float:
        """Sum of every value."""
        return float(self._sum[1])

    @property
    def min(self) -> float:
        """Smallest value written (``inf`` while none is)."""
        return float(self._min[1])

    def __getitem__(self, indices: Any) -> np.ndarray:
        """The values at ``indices``."""
        return self._sum[self.leaves + self._indices(indices)]

    def _indices(self, indices: Any) -> np.ndarray:
        index = np.asarray(indices)
        if index.dtype.kind not in "iu":
            raise ValueError(f"indices must be integers, got {index.dtype}")
        index = index.astype(np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= self.capacity):
            raise ValueError(f"indices must lie in [0, {self.capacity})")
        return index

    def update(self, indices: Any, values: Any) -> None:
        """Set the values at ``indices`` (where an index repeats, its last value wins) and
        recompute their ancestors, one tree level per numpy operation."""
        index = self._indices(indices)
        value = np.asarray(values, dtype=np.float64).reshape(-1)
        if value.size == 1 and index.size != 1:
            value = np.full(index.size, value[0])
        if value.size != index.size:
            raise ValueError(f"{index.size} indices but {value.size} values")
        if not np.all(np.isfinite(value)) or np.any(value < 0):
            raise ValueError("values must be finite and non-negative")
        if not index.size:
            return
        # Stable sort, then keep the last of each run of equal indices: the last write wins,
        # and the sorted nodes let each level's parents be deduplicated by a neighbour test.
        order = np.argsort(index, kind="stable")
        index, value = index[order], value[order]
        last = np.append(index[1:] != index[:-1], True)
        nodes = index[last] + self.leaves
        self._sum[nodes] = value[last]
        self._min[nodes] = value[last]
        for _ in range(self.depth):
            nodes = nodes >> 1
            nodes = nodes[np.append(True, nodes[1:] != nodes[:-1])]
            left, right = 2 * nodes, 2 * nodes + 1
            self._sum[nodes] = self._sum[left] + self._sum[right]
            self._min[nodes] = np.minimum(self._min[left], self._min[right])

    def find(self, prefix_sums: Any) -> np.ndarray:
        """For each prefix sum ``u`` in ``[0, total)``, the index ``j`` whose value's interval
        ``[sum of values before j, ... + value j)`` contains it: sampling ``u`` uniformly
        draws ``j`` with probability ``value j / total``.

        A walk never enters a subtree whose sum is 0, so rounding (``u`` at or just above
        ``total``) still lands on a positive value, never on an unused leaf."""
        remaining = np.array(prefix_sums, dtype=np.float64).reshape(-1)
        if self.total <= 0:
            raise ValueError("cannot search a tree whose values are all 0")
        node = np.ones(remaining.size, dtype=np.int64)
        for _ in range(self.depth):
            left = 2 * node
            left_sum = self._sum[left]
            right = (remaining >= left_sum) & (self._sum[left + 1] > 0) | (left_sum <= 0)
            remaining -= np.where(right, left_sum, 0.0)
            node = left + right
        return node - self.leaves
