"""Training throughput and time-to-score on CartPole-v1, population 4, 8 envs, HPO on.

Usage: ``python benchmarks/train_cartpole.py [dqn|ppo ...] [--steps N] [--async]``.
Runs ``benchmarks/dqn_cartpole.yaml`` (100k env steps per agent) and
``benchmarks/ppo_cartpole.yaml`` (200k) with their fixed seeds and prints, per run:
env steps per second (training and evaluation steps of all agents counted), wall time,
the steps and time at which an agent's mean evaluation score first reached 475, and the
peak resident memory of this process and of its environment workers.

These are this project's tuned manifests; the reference library's figures in
``shared/bench-manifests/`` are for its own (different) CartPole manifests, which
``benchmarks/reference_cartpole.py`` runs and prints beside them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from timed_run import run_manifest

HERE = Path(__file__).parent
RUNS = {"dqn": HERE / "dqn_cartpole.yaml", "ppo": HERE / "ppo_cartpole.yaml"}
SCORE = 475.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algorithms", nargs="*", metavar="ALGO", help="dqn, ppo (default both)")
    parser.add_argument("--steps", type=int, help="env steps per agent (default: the manifest's)")
    parser.add_argument(
        "--async", dest="use_async", action="store_true", help="AsyncVectorEnv workers"
    )
    args = parser.parse_args()
    unknown = set(args.algorithms) - set(RUNS)
    if unknown:
        parser.error(f"unknown algorithm(s) {sorted(unknown)}; choose from {list(RUNS)}")
    for name in args.algorithms or list(RUNS):
        r = run_manifest(RUNS[name], SCORE, args.steps, args.use_async)
        to_score = (
            f"{r['steps_to_score']:,} steps per agent ({r['env_steps_to_score']:,} env steps in all), "
            f"{r['seconds_to_score']:.1f} s"
            if r["steps_to_score"] is not None
            else "not reached"
        )
        print(
            f"{name.upper()}: {r['env_steps']:,} env steps in {r['wall_s']:.1f} s = "
            f"{r['env_steps_per_s']:,.0f} env steps/s; best fitness {r['best']:.1f}; "
            f"first {SCORE:.0f}: {to_score}; peak RSS {r['peak_rss_mib']:.0f} MiB "
            f"(env workers {r['workers_peak_rss_mib']:.0f} MiB)",
            flush=True,
        )


if __name__ == "__main__":
    main()
