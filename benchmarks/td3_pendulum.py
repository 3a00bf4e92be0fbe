"""TD3 on Pendulum-v1: throughput, time to a score and peak memory.

Usage: ``python benchmarks/td3_pendulum.py [--steps N] [--async]``.
Runs ``benchmarks/td3_pendulum.yaml`` (population 4, 8 environments, HPO on, fixed
seeds; 20k env steps per agent) and prints: env steps per second (training and
evaluation steps of all agents counted), wall time, the steps per agent, env steps and
seconds at which an agent's mean evaluation return first reached -250, and the peak
resident memory of this process (``resource.getrusage`` ``ru_maxrss``) and of its
largest child process (environment workers with ``--async``). The CPU seconds of this
process are printed too: on a shared machine the wall time includes waiting. A random policy scores about -1,200.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from agilerl.documents import load_document
from agilerl.models.manifest import parse_manifest
from agilerl.training import LocalTrainer

MANIFEST = Path(__file__).parent / "td3_pendulum.yaml"
SCORE = -250.0


def run(steps: int | None, use_async: bool) -> dict[str, float | None]:
    data, _ = load_document(MANIFEST)
    if steps is not None:
        data["training"]["max_steps"] = steps
    if use_async:
        data["environment"]["sync"] = False
    trainer = LocalTrainer.from_manifest(parse_manifest(data))
    reached: dict[str, float] = {}
    started, cpu = time.perf_counter(), time.process_time()

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
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    state = trainer.state
    return {
        "env_steps": state.env_steps,
        "wall_s": wall,
        "cpu_s": cpu,
        "env_steps_per_s": state.env_steps / wall,
        "best": state.best_fitness,
        "steps_to_score": reached.get("steps"),
        "env_steps_to_score": reached.get("env_steps"),
        "seconds_to_score": reached.get("seconds"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="env steps per agent")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async envs")
    args = parser.parse_args()
    figures = run(args.steps, args.use_async)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"TD3 Pendulum-v1: {figures['env_steps']:,} env steps in {figures['wall_s']:.1f} s "
          f"({figures['env_steps_per_s']:,.0f} env steps/s; {figures['cpu_s']:.1f} s of CPU "
          f"in this process), best {figures['best']:.1f}")  # fmt: skip
    if figures["steps_to_score"] is None:
        print(f"  never reached {SCORE:g}")
    else:
        print(
            f"  first reached {SCORE:g} at {figures['steps_to_score']:,} steps per agent "
            f"({figures['env_steps_to_score']:,} env steps, {figures['seconds_to_score']:.1f} s)"
        )
    print(f"  peak memory: this process {own:.0f} MB, largest child process {workers:.0f} MB")


if __name__ == "__main__":
    main()
