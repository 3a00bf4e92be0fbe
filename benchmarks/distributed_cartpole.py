"""Population sharding: CartPole PPO and DQN on 1 and 2 processes, env steps/s and scaling.

Usage: ``python benchmarks/distributed_cartpole.py [ppo|dqn ...] [--pops 4,8]
[--processes 1,2] [--generations 2]``.

Each run is ``agilerl train`` on the reference's CartPole manifest
(``benchmarks/agilerl_{ppo,dqn}_cartpole.yaml``: 8 environments per agent, HPO on) with
the population size set, for ``--generations`` generations (so selection moves agents
between ranks at least once), started with ``--processes N`` (torchrun on this machine;
one torch thread per process: these agents are small). Printed per run: env steps/s over
the generations (every env step of every agent, training and evaluation, over the
generations' wall time, which the run's ``history.json`` records), the wall time of the
whole command (start-up of the N processes included), and the scaling factor against
one process. The histories of the 1- and N-process runs are also compared: sharding
must not change them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
MANIFESTS = {"ppo": HERE / "agilerl_ppo_cartpole.yaml", "dqn": HERE / "agilerl_dqn_cartpole.yaml"}
#: Env steps per agent per generation (the manifests' evo_steps, DQN's shortened so a
#: run takes a minute or two on a small machine).
EVO_STEPS = {"ppo": 10_240, "dqn": 5_000}


def run(algo: str, pop: int, processes: int, generations: int, out: Path) -> dict[str, float]:
    steps = EVO_STEPS[algo]
    command = [
        sys.executable,
        "-m",
        "agilerl",
        "train",
        str(MANIFESTS[algo]),
        "--out",
        str(out),
        "--quiet",
        "--force",
        "--processes",
        str(processes),
        "--set",
        f"training.pop_size={pop}",
        "--set",
        f"training.evo_steps={steps}",
        "--set",
        f"training.max_steps={steps * generations}",
        "--set",
        "training.seed=1",
        "--set",
        "environment.sync=true",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{algo} pop {pop} on {processes}: failed\n{done.stderr[-3000:]}")
    history = json.loads((out / "history.json").read_text())
    env_steps = sum(record["env_steps"] - prev for record, prev in _increments(history))
    seconds = sum(record["seconds"] for record in history)
    return {
        "rate": env_steps / seconds,
        "wall": wall,
        "history": [
            [(a["index"], a["fitness"], a["mutation"]) for a in record["agents"]]
            for record in history
        ],
    }


def _increments(history: list[dict]) -> list[tuple[dict, int]]:
    """Each record with the cumulative env steps before it."""
    before = [0] + [record["env_steps"] for record in history[:-1]]
    return list(zip(history, before, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algos", nargs="*", help="ppo, dqn (default both)")
    parser.add_argument("--pops", default="4,8")
    parser.add_argument("--processes", default="1,2")
    parser.add_argument("--generations", type=int, default=2)
    args = parser.parse_args()
    unknown = sorted(set(args.algos) - set(MANIFESTS))
    if unknown:
        parser.error(f"unknown algorithm(s) {unknown}: choose from {sorted(MANIFESTS)}")
    pops = [int(p) for p in args.pops.split(",")]
    counts = [int(n) for n in args.processes.split(",")]
    print(f"{os.cpu_count()} cores; one torch thread per process; {args.generations} generations")
    print(f"{'run':<16}{'processes':>10}{'env steps/s':>13}{'wall s':>9}{'scaling':>9}  history")
    with tempfile.TemporaryDirectory() as scratch:
        for algo in args.algos or ["ppo", "dqn"]:
            for pop in pops:
                base = None
                for n in counts:
                    result = run(algo, pop, n, args.generations, Path(scratch) / f"{algo}{pop}_{n}")
                    base = base or result
                    same = "same as 1" if result["history"] == base["history"] else "DIFFERS"
                    print(
                        f"{algo.upper() + ' pop ' + str(pop):<16}{n:>10}{result['rate']:>13,.0f}"
                        f"{result['wall']:>9.1f}{result['rate'] / base['rate']:>8.2f}x  {same}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
