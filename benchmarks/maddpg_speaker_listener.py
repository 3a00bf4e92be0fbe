"""MADDPG on mpe2's simple_speaker_listener_v4: throughput, team return, peak memory.

Usage: ``python benchmarks/maddpg_speaker_listener.py [--steps N] [--async]``.
Runs ``benchmarks/maddpg_speaker_listener.yaml`` (population 4, 8 environments, HPO on,
fixed seeds; 20k env steps per agent) and prints: env steps per second (training and
evaluation steps of all agents counted), wall and CPU time, the team return (both
agents' rewards summed per episode: the fitness) of the best and the mean agent in each
generation, and the peak resident memory of this process and of its largest child process (environment workers with
``--async``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from timed_run import run_manifest

MANIFEST = Path(__file__).parent / "maddpg_speaker_listener.yaml"
#: A score no speaker-listener team reaches: the run goes to its budget.
NEVER = 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="env steps per agent")
    parser.add_argument("--async", dest="use_async", action="store_true", help="async envs")
    args = parser.parse_args()
    figures = run_manifest(MANIFEST, NEVER, args.steps, args.use_async)
    print(f"MADDPG simple_speaker_listener_v4: {figures['env_steps']:,} env steps in "
          f"{figures['wall_s']:.1f} s ({figures['env_steps_per_s']:,.0f} env steps/s; "
          f"{figures['cpu_s']:.1f} s of CPU in this process)")  # fmt: skip
    print("  team return per generation (best / population mean):")
    for record in figures["history"]:
        fitness = [a["fitness"] for a in record["agents"]]
        print(f"    generation {record['generation']}: {max(fitness):8.1f} / "
              f"{sum(fitness) / len(fitness):8.1f}  ({record['steps']:,} steps per agent)")  # fmt: skip
    print(
        f"  peak memory: this process {figures['peak_rss_mib']:.0f} MB, "
        f"largest child process {figures['workers_peak_rss_mib']:.0f} MB"
    )


if __name__ == "__main__":
    main()
