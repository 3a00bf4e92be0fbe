"""Tiny Minari datasets the tests write themselves (nothing is downloaded): CartPole
episodes played at random or by a policy, stored through minari's own writer in the
data directory MINARI_DATASETS_PATH names."""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np

#: ``policy(observation, rng)`` -> a CartPole action.
Policy = Callable[[np.ndarray, np.random.Generator], int]


def random_policy(observation: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.integers(2))


def write_cartpole_dataset(
    dataset_id: str, steps: int, policy: Policy = random_policy, seed: int = 0
) -> int:
    """Whole CartPole-v1 episodes of ``policy`` until at least ``steps`` transitions,
    written as the Minari dataset ``dataset_id`` (minari's DataCollector needs jax; its
    episode buffers do not). Returns the number of transitions."""
    import minari
    from minari.data_collector.episode_buffer import EpisodeBuffer

    env = gym.make("CartPole-v1")
    rng = np.random.default_rng(seed)
    episodes, total = [], 0
    while total < steps:
        observation, _ = env.reset(seed=seed + len(episodes))
        columns: dict[str, list] = {"observations": [observation]}
        for key in ("actions", "rewards", "terminations", "truncations"):
            columns[key] = []
        done = False
        while not done:
            action = policy(observation, rng)
            observation, reward, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
            for key, value in zip(
                columns, (observation, action, reward, terminated, truncated), strict=True
            ):
                columns[key].append(value)
        total += len(columns["actions"])
        arrays = {key: np.asarray(value) for key, value in columns.items()}
        episodes.append(EpisodeBuffer(id=len(episodes), infos={}, **arrays))
    env.close()
    minari.create_dataset_from_buffers(
        dataset_id,
        episodes,
        env="CartPole-v1",
        eval_env="CartPole-v1",
        algorithm_name="tests",
        author="agilerl tests",
        author_email="tests@example.com",
        code_permalink="https://example.com/tests",
        description="A tiny CartPole dataset written by the tests.",
    )
    return total
