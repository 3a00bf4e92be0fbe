"""Run the reference library (AgileRL) itself on one of its CartPole manifests, for a
side-by-side comparison with ``benchmarks/reference_cartpole.py``.

Usage, in a *separate* venv with ``agilerl==2.58`` installed (never this project's)::

    python benchmarks/agilerl_side_by_side.py benchmarks/agilerl_dqn_cartpole.yaml 42 1 2

For each seed: Python's, NumPy's and torch's global generators are seeded (AgileRL's
loops take no run seed; its vector environments are reset without one, so a seed does
not reproduce a run exactly), one torch thread, synchronous environments and
``max_steps`` 25,000 (DQN; its loop then trains 30,000 steps per agent). Prints the
final population's fitness and its best / mean, then the averages.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time

import numpy as np
import torch
import yaml

MAX_STEPS = {"DQN": 25_000, "PPO": 50_000}


def run(path: str, seed: int) -> tuple[float, float, float]:
    from agilerl.training.trainer import LocalTrainer  # the reference's, in its own venv

    with open(path) as handle:
        doc = yaml.safe_load(handle)
    doc["training"]["max_steps"] = MAX_STEPS[doc["algorithm"]["name"]]
    doc["environment"]["sync"] = True
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as copy:
        yaml.safe_dump(doc, copy)
    try:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        trainer = LocalTrainer.from_manifest(copy.name)
        started = time.perf_counter()
        _, fitnesses = trainer.train()[:2]
        wall = time.perf_counter() - started
    finally:
        os.unlink(copy.name)
    final = [float(f) for f in fitnesses]
    return max(final), float(np.mean(final)), wall


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    path, seeds = sys.argv[1], [int(s) for s in sys.argv[2:]]
    results = []
    for seed in seeds:
        best, mean, wall = run(path, seed)
        results.append((best, mean))
        print(
            f"seed {seed}: best/mean final fitness {best:.0f}/{mean:.0f} ({wall:.0f} s)", flush=True
        )
    best, mean = np.mean(results, axis=0)
    print(f"average over {len(seeds)} seeds: best/mean {best:.0f}/{mean:.0f}")


if __name__ == "__main__":
    main()
