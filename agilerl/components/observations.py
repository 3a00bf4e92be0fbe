"""Observation trees (Dict/Tuple observations), and one observation or a batch of them.

:func:`map_tree` and :func:`tree_leaves` are the one walk over nested observations that
the buffers, the training loops and the algorithms share (with :func:`stack_tree`,
:func:`replace_rows` and :func:`leading_size` built on it). The rest decides, from the observation space's shapes, whether a
value is one observation or a batch.

The networks take batches (a leading dimension on every leaf of a Dict/Tuple
observation); :meth:`RLAlgorithm.predict` also takes a single observation, as an
environment returns it. A leaf is a single observation when its shape is the space's
shape (a Discrete leaf: a scalar) and a batch when it has one more leading dimension; every
leaf of a Dict/Tuple observation must agree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from gymnasium import spaces


def map_tree(fn: Callable[..., Any], tree: Any, *others: Any) -> Any:
    """Apply ``fn`` to the leaves of ``tree`` (nested dicts, tuples and lists) and to the
    matching leaves of ``others``, which must share its structure; the result keeps it
    (sequences come back as tuples)."""
    if isinstance(tree, Mapping):
        return {k: map_tree(fn, v, *(o[k] for o in others)) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        for other in others:
            if len(other) != len(tree):
                raise ValueError(f"expected {len(tree)} observation parts, got {len(other)}")
        return tuple(map_tree(fn, v, *(o[i] for o in others)) for i, v in enumerate(tree))
    return fn(tree, *others)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in :func:`map_tree` order."""
    out: list[Any] = []
    map_tree(out.append, tree)
    return out


def leading_size(batch: Any) -> int:
    """The leading (batch) dimension of a batch of observations: its first leaf's."""
    first = tree_leaves(batch)[0]
    return int(_shape(first)[0])


def stack_tree(items: list[Any]) -> Any:
    """Observations (trees of the same structure) stacked into one batch per leaf."""
    return map_tree(lambda *leaves: np.stack(leaves), items[0], *items[1:])


def concat_tree(batches: list[Any]) -> Any:
    """Batches (trees of the same structure) one after the other, per leaf."""
    return map_tree(lambda *leaves: np.concatenate(leaves), batches[0], *batches[1:])


def split_tree(batch: Any, parts: int) -> list[Any]:
    """A batch cut into ``parts`` blocks of equal size along its leading dimension (the
    inverse of :func:`concat_tree` of equal batches): a cohort's rows, agent by agent."""
    size = leading_size(batch) // parts
    return [
        map_tree(lambda leaf, p=p: leaf[p * size : (p + 1) * size], batch) for p in range(parts)
    ]


def replace_rows(batch: Any, rows: np.ndarray, items: list[Any]) -> Any:
    """A copy of ``batch`` whose rows ``rows`` are the observations ``items`` (one per
    row, trees of the batch's structure)."""
    if len(rows) == 0:
        return batch

    def patch(leaf: Any, *replacements: Any) -> np.ndarray:
        leaf = np.array(leaf, copy=True)
        leaf[rows] = np.stack(replacements)
        return leaf

    return map_tree(patch, batch, *items)


def _shape(value: Any) -> tuple[int, ...]:
    # torch tensors and arrays have .shape; lists and Python scalars go through numpy.
    shape = getattr(value, "shape", None)
    return tuple(shape) if shape is not None else np.shape(value)


def _leaf_shape(space: spaces.Space) -> tuple[int, ...]:
    if isinstance(space, spaces.Discrete):
        return ()
    if space.shape is None:  # Text, Graph, Sequence: no fixed shape to hold a value to
        raise TypeError(f"{space!r} has no fixed shape to check an observation against")
    return tuple(space.shape)


def _leaves(obs: Any, space: spaces.Space, where: str) -> list[tuple[str, Any, spaces.Space]]:
    """``(where, value, space)`` of every leaf of ``obs``, checked against the space's tree."""
    if isinstance(space, spaces.Dict):
        if not isinstance(obs, dict):
            raise ValueError(
                f"{where}: expected a dict with keys {list(space.spaces)}, got {obs!r}"
            )
        missing = [key for key in space.spaces if key not in obs]
        if missing:
            raise ValueError(f"{where}: missing key(s) {missing} of the Dict observation space")
        return [
            leaf
            for key, sub in space.spaces.items()
            for leaf in _leaves(obs[key], sub, f"{where}[{key!r}]")
        ]
    if isinstance(space, spaces.Tuple):
        if not isinstance(obs, (tuple, list)) or len(obs) != len(space.spaces):
            raise ValueError(f"{where}: expected a tuple of {len(space.spaces)} parts, got {obs!r}")
        return [
            leaf
            for i, (part, sub) in enumerate(zip(obs, space.spaces, strict=True))
            for leaf in _leaves(part, sub, f"{where}[{i}]")
        ]
    return [(where, obs, space)]


def batch_size(obs: Any, space: spaces.Space, where: str = "obs") -> int | None:
    """The batch size of ``obs``, or None when it is one observation of ``space``.

    Raises ValueError naming the leaf whose shape is neither the space's shape nor
    ``(n, *shape)``, or when leaves disagree."""
    sizes = set()
    for at, value, leaf_space in _leaves(obs, space, where):
        shape, expected = _shape(value), _leaf_shape(leaf_space)
        if shape == expected:
            sizes.add(None)
        elif len(shape) == len(expected) + 1 and shape[1:] == expected:
            sizes.add(int(shape[0]))
        else:
            batch = "(" + ", ".join(["n", *map(str, expected)]) + ")"
            raise ValueError(
                f"{at}: shape {shape} fits neither one observation of {leaf_space} "
                f"(shape {expected}) nor a batch (shape {batch})"
            )
    if len(sizes) > 1:
        found = ", ".join("one observation" if s is None else f"a batch of {s}" for s in sizes)
        raise ValueError(f"{where}: its parts disagree ({found})")
    return sizes.pop()


def add_batch_dim(obs: Any, space: spaces.Space) -> Any:
    """One observation of ``space`` as a batch of one (a leading axis on every leaf)."""
    if isinstance(space, spaces.Dict):
        return {key: add_batch_dim(obs[key], sub) for key, sub in space.spaces.items()}
    if isinstance(space, spaces.Tuple):
        return tuple(add_batch_dim(part, sub) for part, sub in zip(obs, space.spaces, strict=True))
    if hasattr(obs, "unsqueeze"):  # a torch tensor stays one, on its device
        return obs.unsqueeze(0)
    return np.asarray(obs)[None]


# -- images: channels last in, channels first to the networks ----------------------------
# The CNN encoder takes (channels, height, width); Gymnasium's and PettingZoo's image
# environments (ALE without preprocessing, butterfly games, most rendering wrappers)
# return (height, width, channels). Like Stable-Baselines3's VecTransposeImage, the
# environments the engine builds turn such observations around, decided from the space
# alone: a 3-D Box whose last dimension is its smallest and at most 4 (grey, RGB, RGBA).


def channels_last(space: spaces.Space) -> bool:
    """Whether ``space`` is an image with its channels last, ``(H, W, C)``."""
    if not isinstance(space, spaces.Box) or len(space.shape) != 3:
        return False
    height, width, channels = space.shape
    return channels <= 4 and channels < min(height, width)


def channels_first_space(space: spaces.Space) -> spaces.Box:
    """The ``(C, H, W)`` space of a channels-last image space ``(H, W, C)``."""
    if not channels_last(space) or not isinstance(space, spaces.Box):
        raise TypeError(f"{space!r} is not an image with its channels last")
    return spaces.Box(
        low=np.moveaxis(space.low, -1, 0),
        high=np.moveaxis(space.high, -1, 0),
        dtype=space.dtype,  # type: ignore[arg-type]
    )


def channels_first(image: np.ndarray) -> np.ndarray:
    """A channels-last image (or a batch of them) with its channels first, contiguous."""
    return np.ascontiguousarray(np.moveaxis(image, -1, -3))
