"""Multi-frequency PBT against tournament selection: the same population, task, budget,
mutations and seeds, only ``selection_strategy`` differing.

Usage: ``OMP_NUM_THREADS=1 python benchmarks/mf_pbt.py [--algo ppo|dqn] [--seeds 0,1,2,3,4]
[--pop 8] [--steps N] [--plot benchmarks/results/mf_pbt.png]``

Each seed trains a population of ``--pop`` on CartPole-v1 twice: with tournament
selection (``tournament_size: 2``, elitism) and with MF-PBT (two sub-populations,
frequencies 1 and 5, the default brackets). Evolution is on in both (the default
mutation spec, its ``rand_seed`` the run's seed). Printed per seed and strategy: the
final population's best and mean fitness, the best fitness ever evaluated, and the wall
time; then the mean over seeds and their difference with its standard error. With
``--plot``, the best fitness of each generation (mean over seeds) of both strategies.
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np

from agilerl.models.manifest import parse_manifest
from agilerl.trainer import LocalTrainer

NETWORK = {
    "latent_dim": 64,
    "encoder_config": {"hidden_size": [64]},
    "head_config": {"hidden_size": [64]},
}
#: The task of each algorithm: CartPole, its budget per agent and generation length.
TASKS = {
    "ppo": {
        "algorithm": {"name": "PPO", "batch_size": 128, "lr": 1e-3, "learn_step": 512},
        "environment": {"name": "CartPole-v1", "num_envs": 8, "vectorize": "native"},
        "training": {"max_steps": 40_960, "evo_steps": 2_048},
    },
    "dqn": {
        "algorithm": {"name": "DQN", "batch_size": 64, "lr": 1e-3, "learn_step": 4},
        "environment": {"name": "CartPole-v1", "num_envs": 8, "vectorize": "native"},
        "training": {"max_steps": 20_000, "evo_steps": 1_000},
        "replay_buffer": {"max_size": 50_000},
    },
}
STRATEGIES = {
    "tournament": {"strategy": "tournament", "tournament_size": 2, "elitism": True},
    "multi_frequency": {"strategy": "multi_frequency", "evolution_frequency_ratios": [1, 5]},
}


def manifest(algo: str, strategy: str, pop: int, seed: int, steps: int | None) -> dict:
    document = copy.deepcopy(TASKS[algo])
    document["network"] = NETWORK
    document["training"].update(pop_size=pop, seed=seed, eval_loop=1)
    if steps is not None:
        document["training"]["max_steps"] = steps
    document["mutation"] = {"rand_seed": seed}
    document["selection_strategy"] = STRATEGIES[strategy]
    return document


def run(document: dict) -> dict:
    trainer = LocalTrainer.from_manifest(parse_manifest(document))
    start = time.perf_counter()
    _, fitnesses = trainer.train(verbose=False)
    seconds = time.perf_counter() - start
    history = trainer.state.history
    per_generation = [max(a["fitness"] for a in record["agents"]) for record in history]
    return {
        "best": float(max(fitnesses)),
        "mean": float(np.mean(fitnesses)),
        "best_ever": float(max(per_generation)),
        "curve": per_generation,
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=sorted(TASKS), default="ppo")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--pop", type=int, default=8)
    parser.add_argument("--steps", type=int, default=None, help="env steps per agent")
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    results: dict[str, list[dict]] = {name: [] for name in STRATEGIES}
    print(f"{args.algo.upper()} on CartPole-v1, population {args.pop}, seeds {seeds}")
    print(f"{'seed':>4} {'strategy':<16} {'best':>7} {'mean':>7} {'best ever':>9} {'s':>6}")
    for seed in seeds:
        for name in STRATEGIES:
            out = run(manifest(args.algo, name, args.pop, seed, args.steps))
            results[name].append(out)
            print(
                f"{seed:>4} {name:<16} {out['best']:>7.1f} {out['mean']:>7.1f} "
                f"{out['best_ever']:>9.1f} {out['seconds']:>6.1f}",
                flush=True,
            )
    print("mean over seeds:")
    for name, runs in results.items():
        best = np.mean([r["best"] for r in runs])
        mean = np.mean([r["mean"] for r in runs])
        ever = np.mean([r["best_ever"] for r in runs])
        print(f"  {name:<16} best {best:7.1f}  mean {mean:7.1f}  best ever {ever:7.1f}")
    diff = np.array([m["mean"] - t["mean"] for m, t in zip(*results.values(), strict=True)])
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
    print(f"  final mean fitness, multi_frequency - tournament: {diff.mean():+.1f} (SE {se:.1f})")
    if args.plot is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        for name, runs in results.items():
            length = min(len(r["curve"]) for r in runs)
            curve = np.mean([r["curve"][:length] for r in runs], axis=0)
            ax.plot(np.arange(length), curve, label=name)
        ax.set_xlabel("generation")
        ax.set_ylabel(f"best fitness (mean of {len(seeds)} seeds)")
        ax.set_title(f"{args.algo.upper()} on CartPole-v1, population {args.pop}")
        ax.legend()
        fig.tight_layout()
        args.plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(args.plot, dpi=120)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
