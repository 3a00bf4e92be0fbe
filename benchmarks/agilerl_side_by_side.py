"""Run the reference library (AgileRL) itself on one of its CartPole manifests, for a
side-by-side comparison with ``benchmarks/reference_cartpole.py``.

Usage, in a *separate* venv with ``agilerl==2.58`` installed (never this project's)::

    python benchmarks/agilerl_side_by_side.py benchmarks/agilerl_dqn_cartpole.yaml 42 1 2

For each seed: Python's, NumPy's and torch's global generators are seeded (AgileRL's
loops take no run seed; its vector environments are reset without one, so a seed does
not reproduce a run exactly), one torch thread, synchronous environments and
``max_steps`` 25,000 (DQN; its loop then trains 30,000 steps per agent) or 50,000 (PPO;
51,200). Prints the final population's best / mean fitness and the training-only env
steps/s (training env steps of all agents over the run's wall time), then the averages.
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
    try:  # the reference's, in its own venv (its module moved between releases)
        from agilerl.trainer import LocalTrainer
    except ModuleNotFoundError:
        from agilerl.training.trainer import LocalTrainer

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
        population, fitnesses = trainer.train()[:2]
        wall = time.perf_counter() - started
    finally:
        os.unlink(copy.name)
    final = [float(f) for f in fitnesses]
    # Every agent trains the same steps per generation (clones inherit the count).
    train_steps = sum(int(agent.steps) for agent in population)
    return max(final), float(np.mean(final)), wall, train_steps / wall


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    torch.set_num_threads(1)
    path, seeds = sys.argv[1], [int(s) for s in sys.argv[2:]]
    results = []
    for seed in seeds:
        best, mean, wall, rate = run(path, seed)
        results.append((best, mean, rate))
        print(
            f"seed {seed}: best/mean final fitness {best:.0f}/{mean:.0f} ({wall:.0f} s, "
            f"{rate:,.0f} training-only env steps/s)",
            flush=True,
        )
    best, mean, rate = np.mean(results, axis=0)
    print(
        f"average over {len(seeds)} seeds: best/mean {best:.0f}/{mean:.0f}, "
        f"{rate:,.0f} training-only env steps/s"
    )


if __name__ == "__main__":
    main()
