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
import resource
import time
from pathlib import Path

from agilerl.documents import load_document
from agilerl.models.manifest import parse_manifest
from agilerl.training import LocalTrainer

HERE = Path(__file__).parent
RUNS = {"dqn": HERE / "dqn_cartpole.yaml", "ppo": HERE / "ppo_cartpole.yaml"}
SCORE = 475.0


def run(name: str, steps: int | None, use_async: bool) -> dict[str, float | None]:
    data, _ = load_document(RUNS[name])
    if steps is not None:
        data["training"]["max_steps"] = steps
    if use_async:
        data["environment"]["sync"] = False
    trainer = LocalTrainer.from_manifest(parse_manifest(data))
    reached: dict[str, float] = {}
    started = time.perf_counter()

    def on_generation(state) -> None:
        record = state.history[-1]
        if not reached and max(a["fitness"] for a in record["agents"]) >= SCORE:
            reached.update(
                steps=record["steps"],
                env_steps=record["env_steps"],
                seconds=time.perf_counter() - started,
            )

    trainer.on_generation = on_generation
    trainer.train(verbose=False)
    wall = time.perf_counter() - started
    state = trainer.state
    return {
        "env_steps": state.env_steps,
        "wall_s": wall,
        "env_steps_per_s": state.env_steps / wall,
        "best": state.best_fitness,
        "steps_to_475": reached.get("steps"),
        "env_steps_to_475": reached.get("env_steps"),
        "seconds_to_475": reached.get("seconds"),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


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
        r = run(name, args.steps, args.use_async)
        to_score = (
            f"{r['steps_to_475']:,} steps per agent ({r['env_steps_to_475']:,} env steps in all), "
            f"{r['seconds_to_475']:.1f} s"
            if r["steps_to_475"] is not None
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
