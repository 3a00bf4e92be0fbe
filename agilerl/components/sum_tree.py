"""``SumTree``: the priorities of a prioritised replay buffer, summed for sampling.

A tree over ``capacity`` leaves in which every node holds the sum of its children, and,
in a twin array, their minimum: proportional sampling walks down the sums, and the
smallest priority gives the largest importance-sampling weight, which normalises them.

The tree is ``BRANCHING``-ary (32 children per node), not binary. The work is done by
numpy calls over whole batches, and for the batches replay uses (a vector step's few
rows, a learning batch of 64-256) the cost of a call, not its size, dominates: a
million leaves take 4 levels instead of 20, so an update or a search makes about a
fifth of the calls. Level ``d`` is a flat array whose length is a multiple of
``BRANCHING``; node ``j`` of level ``d + 1`` sums entries ``[32 j, 32 j + 32)`` of
level ``d`` (a ``reshape(-1, 32)`` row); level 0 holds the values themselves. Padding
holds 0 in the sums and +inf in the minima, so it is never sampled and never the
minimum.

:meth:`SumTree.update` writes any number of values and recomputes their ancestors one
level per step (parents from their children, never adjusted by deltas, so rounding
errors do not accumulate over a long run); :meth:`SumTree.find` walks a whole batch of
prefix sums down together.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Children per node (see the module docstring for why not 2).
BRANCHING = 32


def last_occurrence(index: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct entries of ``index`` (sorted) with the value of each one's last
    occurrence: numpy leaves the winner of a repeated index in one assignment
    unspecified, so every batch write that may repeat an index goes through this."""
    order = np.argsort(index, kind="stable")
    index, value = index[order], value[order]
    last = np.append(index[1:] != index[:-1], True)[: index.size]  # (none when empty)
    return index[last], value[last]


class SumTree:
    """Sums and minima of ``capacity`` non-negative float64 values (see module docstring)."""

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or int(capacity) != capacity or capacity < 1:
            raise ValueError(f"capacity must be a positive integer, got {capacity!r}")
        self.capacity = int(capacity)
        counts = [self.capacity]  # real nodes per level, leaves first, up to the root
        while counts[-1] > 1:
            counts.append(-(-counts[-1] // BRANCHING))
        # Level d is padded to BRANCHING entries per node of level d + 1; the root is alone.
        lengths = [BRANCHING * above for above in counts[1:]] + [1]
        self._sum = [np.zeros(n) for n in lengths]
        self._min = [np.full(n, np.inf) for n in lengths]

    @property
    def depth(self) -> int:
        """Levels between the root and the leaves."""
        return len(self._sum) - 1

    @property
    def total(self) -> float:
        """Sum of every value."""
        return float(self._sum[-1][0])

    @property
    def min(self) -> float:
        """Smallest value written (``inf`` while none is)."""
        return float(self._min[-1][0])

    def __getitem__(self, indices: npt.ArrayLike) -> np.ndarray:
        """The values at ``indices``."""
        return self._sum[0][self._indices(indices)]

    def _indices(self, indices: npt.ArrayLike) -> np.ndarray:
        index = np.asarray(indices)
        if index.dtype.kind not in "iu":
            raise ValueError(f"indices must be integers, got {index.dtype}")
        index = index.astype(np.int64).reshape(-1)
        if index.size and (index.min() < 0 or index.max() >= self.capacity):
            raise ValueError(f"indices must lie in [0, {self.capacity})")
        return index

    def update(self, indices: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Set the values at ``indices`` (where an index repeats, its last value wins) and
        recompute their ancestors, one tree level per step."""
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
        nodes, value = last_occurrence(index, value)
        self._write(nodes, value, value)

    def clear(self, indices: npt.ArrayLike) -> None:
        """Make the leaves at ``indices`` unused again, as they were before any write (0
        in the sums, +inf in the minima), and recompute their ancestors: how a replay
        buffer rolls a slot back to empty."""
        index = np.unique(self._indices(indices))
        if index.size:
            self._write(index, 0.0, np.inf)

    def _write(self, nodes: np.ndarray, sums: npt.ArrayLike, mins: npt.ArrayLike) -> None:
        """Set leaves ``nodes`` (distinct) and recompute their ancestors, level by level."""
        self._sum[0][nodes] = sums
        self._min[0][nodes] = mins
        for below in range(self.depth):
            # A parent listed twice is written twice with the same value: no need to dedupe.
            nodes = nodes // BRANCHING
            self._sum[below + 1][nodes] = self._sum[below].reshape(-1, BRANCHING)[nodes].sum(1)
            self._min[below + 1][nodes] = self._min[below].reshape(-1, BRANCHING)[nodes].min(1)

    def find(self, prefix_sums: npt.ArrayLike) -> np.ndarray:
        """For each prefix sum ``u`` in ``[0, total)``, the index ``j`` whose interval
        ``[sum of values before j, that + value j)`` contains it: ``u`` drawn uniformly
        gives ``j`` with probability ``value j / total``.

        A walk never picks a child whose sum is 0, so rounding (``u`` at or above a
        node's sum, or a node's children summing to a hair less than it) still lands on
        a positive value, never on an unused leaf."""
        remaining = np.array(prefix_sums, dtype=np.float64).reshape(-1)
        if self.total <= 0:
            raise ValueError("cannot search a tree whose values are all 0")
        rows = np.arange(remaining.size)
        node = np.zeros(remaining.size, dtype=np.int64)
        for level in reversed(range(self.depth)):
            edges = np.cumsum(self._sum[level].reshape(-1, BRANCHING)[node], axis=1)
            # u is kept below the node's children's total, so some child's cumulative sum
            # exceeds it; the first that does has a positive value (a zero child's edge
            # equals its predecessor's). The node's total is positive: it was chosen so.
            np.minimum(remaining, np.nextafter(edges[:, -1], 0.0), out=remaining)
            child = (edges > remaining[:, None]).argmax(1)
            remaining -= np.where(child > 0, edges[rows, child - 1], 0.0)
            node = node * BRANCHING + child
        return node
