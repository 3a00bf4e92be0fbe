"""CartPole-v1 env steps per second by ``environment.vectorize``: native, sync, async.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/vector_envs.py [--steps N] [--repeats R]``.

Each vectorisation is built by :func:`~agilerl.families.single_agent.envs.make_vector_env`
(so ``native`` includes the same-step autoreset adapter, and ``sync``/``async`` the
engine's per-copy guard), for 8 and 32 copies, and stepped ``N`` vector steps with
random actions drawn beforehand; the best of ``R`` repeats is printed (the machine may be
shared). Also printed: gymnasium's ``CartPoleVectorEnv`` bare (next-step autoreset, which
the loops cannot use: the adapter's cost is the difference), and EnvPool's CartPole-v1
(one thread; next-step autoreset too) where ``import envpool`` works.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from agilerl.families.single_agent.envs import make_vector_env
from agilerl.models.env import GymEnvSpec

COPIES = (8, 32)


def _ours(kind: str) -> Callable[[int], Any]:
    return lambda n: make_vector_env(GymEnvSpec(name="CartPole-v1", num_envs=n, vectorize=kind))


def _bare(n: int) -> Any:
    return gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")


def _envpool(n: int) -> Any:
    import envpool

    return envpool.make_gymnasium("CartPole-v1", num_envs=n, batch_size=n, num_threads=1, seed=0)


#: label -> builder of n copies
KINDS: dict[str, Callable[[int], Any]] = {
    "native": _ours("native"),
    "sync": _ours("sync"),
    "async": _ours("async"),
    "bare CartPoleVectorEnv (next-step)": _bare,
    "envpool (next-step, 1 thread)": _envpool,
}


def steps_per_second(build: Callable[[int], Any], n: int, steps: int, repeats: int) -> float:
    """Env steps (vector steps x copies) per second of ``steps`` random vector steps,
    the best of ``repeats``."""
    env = build(n)
    try:
        actions = np.random.default_rng(0).integers(0, 2, size=(steps, n)).astype(np.int32)
        best = 0.0
        for _ in range(repeats):
            env.reset(seed=0)
            started = time.perf_counter()
            for action in actions:
                env.step(action)
            best = max(best, steps * n / (time.perf_counter() - started))
        return best
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2_000, help="vector steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"CartPole-v1, random actions, {args.steps:,} vector steps, best of {args.repeats}")
    print(f"{'vectorisation':<36}" + "".join(f"{f'{n} copies':>14}" for n in COPIES))
    for label, build in KINDS.items():
        try:
            figures = [steps_per_second(build, n, args.steps, args.repeats) for n in COPIES]
        except ImportError as err:
            print(f"{label:<36}  not measured: {err}")
            continue
        print(f"{label:<36}" + "".join(f"{f'{value:,.0f}/s':>14}" for value in figures))


if __name__ == "__main__":
    main()
