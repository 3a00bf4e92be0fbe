"""Recording an offline dataset: transitions of a Gymnasium environment, acted in at
random or by a trained agent (epsilon-greedy around it), written to an HDF5 file in the
layout :func:`agilerl.families.offline.datasets.load_dataset` reads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from agilerl.families.offline.datasets import REQUIRED, _h5py


def collect_transitions(
    env: Any, steps: int, agent: Any = None, epsilon: float = 0.0, seed: int = 0
) -> tuple[dict[str, np.ndarray], list[float]]:
    """``steps`` transitions (rounded up to whole vector steps) from the vectorised
    ``env``: each action is uniformly random with probability ``epsilon`` (always
    without ``agent``), else ``agent.eval_action`` (greedy). ``next_observations`` holds
    the true last observation of an episode that ended; ``terminals`` and
    ``truncations`` what the environment said. Returns the columns (key -> array) and the
    returns of the episodes that ended within them."""
    from agilerl.algorithms.core.rl_algorithm import action_mask_from_info
    from agilerl.families.single_agent.off_policy import with_final_obs

    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must lie in [0, 1], got {epsilon}")
    rng = np.random.default_rng(seed)
    space = env.single_action_space
    space.seed(int(rng.integers(2**31)))
    columns: dict[str, list[np.ndarray]] = {key: [] for key in (*REQUIRED, "truncations")}
    obs, info = env.reset(seed=seed)
    running = np.zeros(env.num_envs)
    returns: list[float] = []
    for _ in range(-(-steps // env.num_envs)):
        action = np.stack([space.sample() for _ in range(env.num_envs)])
        if agent is not None:
            chosen = np.asarray(agent.eval_action(obs, action_mask_from_info(info)))
            greedy = rng.random(env.num_envs) >= epsilon
            action[greedy] = chosen[greedy]
        next_obs, reward, terminated, truncated, info = env.step(action)
        for key, value in zip(
            columns,
            (obs, action, reward, with_final_obs(next_obs, info), terminated, truncated),
            strict=True,
        ):
            columns[key].append(np.asarray(value))
        obs = next_obs
        running += reward
        ended = np.logical_or(terminated, truncated)
        returns.extend(running[ended].tolist())
        running[ended] = 0.0
    return {key: np.concatenate(parts)[:steps] for key, parts in columns.items()}, returns


def write_dataset(path: str | Path, data: dict[str, np.ndarray]) -> Path:
    """Write ``data`` (key -> array) to the HDF5 file ``path``, atomically: a temporary
    beside it renamed into place, so a half-written file never has the final name."""
    h5py = _h5py()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with h5py.File(tmp, "w") as file:
        for key, value in data.items():
            file.create_dataset(key, data=value, compression="gzip")
    os.replace(tmp, path)
    return path
