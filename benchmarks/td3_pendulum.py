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
from pathlib import Path

from timed_run import run_manifest

MANIFEST = Path(__file__).parent / "td3_pendulum.yaml"
SCORE = -250.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="env steps per agent")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async envs")
    args = parser.parse_args()
    figures = run_manifest(MANIFEST, SCORE, args.steps, args.use_async)
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
    print(
        f"  peak memory: this process {figures['peak_rss_mib']:.0f} MB, "
        f"largest child process {figures['workers_peak_rss_mib']:.0f} MB"
    )


if __name__ == "__main__":
    main()
