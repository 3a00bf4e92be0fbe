"""What Gymnasium's environment checker adds to a run's pre-flight on a user environment.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/env_check.py [--repeats R]``.

Times :func:`~agilerl.families.single_agent.env_check.check_user_env` (the checker, its
warnings collected) on the example corridor (``examples/corridor/corridor.py``, built by
its entry point as a manifest names it) and on CartPole-v1 (unwrapped, as a user's entry
point returning Gymnasium's class would give it); each on a fresh environment, the median
and the worst of ``R`` repeats printed (the machine may be shared).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym

from agilerl.families.single_agent.env_check import check_user_env
from agilerl.families.single_agent.envs import make_env
from agilerl.models.env import GymEnvSpec

CORRIDOR = GymEnvSpec(
    name="corridor",
    entrypoint="corridor.py:make",
    path=str(Path(__file__).resolve().parents[1] / "examples" / "corridor"),
)
ENVS: dict[str, Callable[[], gym.Env]] = {
    "corridor (examples/corridor)": lambda: make_env(CORRIDOR).env,  # below the guard
    "CartPole-v1 (unwrapped)": lambda: gym.make("CartPole-v1").unwrapped,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    for label, build in ENVS.items():
        times = []
        for _ in range(args.repeats):
            env = build()
            start = time.perf_counter()
            check_user_env(env, label)
            times.append(time.perf_counter() - start)
            env.close()
        print(
            f"{label}: median {statistics.median(times) * 1e3:.2f} ms, "
            f"worst {max(times) * 1e3:.2f} ms over {args.repeats} checks"
        )


if __name__ == "__main__":
    main()
