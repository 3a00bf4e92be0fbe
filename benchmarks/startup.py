"""How long the command line takes to start: wall seconds, each the median of --runs
fresh processes, from just before the process is started:

1. ``agilerl train`` on a refused manifest (``training.max_steps`` misspelt) until it exits;
2. ``agilerl validate configs/ppo.yaml`` until it exits;
3. ``agilerl train configs/ppo.yaml`` (PPO on CartPole-v1) until its first environment
   step: the child replaces CartPole's ``step`` with one that prints the time and ends
   the process, and reports how many modules it had imported by then and which
   of the heavy stacks a CartPole run has no use for were among them;
4. for scale, ``python -c "import torch, torch._dynamo, gymnasium"``: what no such run
   can start without (torch.optim imports torch._dynamo when it builds an optimizer).

    python benchmarks/startup.py [--runs 3]

Figures on a shared machine vary with its load; say what else ran beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: Stacks a CartPole PPO run does not use: LLM, multi-agent, offline data, plotting, TB.
HEAVY = (
    "transformers",
    "accelerate",
    "peft",
    "datasets",
    "pettingzoo",
    "matplotlib",
    "tensorboard",
    "h5py",
    "scipy",
)

# Run in the child: the first step of a CartPole environment (one or a natively
# vectorised batch: training steps the first) ends the process.
FIRST_STEP = """
import json, os, sys, time
from gymnasium.envs.classic_control import cartpole
def step(self, *args, **kwargs):
    heavy = sorted(m for m in {heavy!r} if m in sys.modules)
    print(json.dumps({{"at": time.time(), "modules": len(sys.modules),
                      "torch": "torch" in sys.modules, "heavy": heavy}}), flush=True)
    os._exit(0)
cartpole.CartPoleEnv.step = cartpole.CartPoleVectorEnv.step = step
from agilerl.cli import main
main(["train", {manifest!r}, "--out", {out!r}, "--quiet"])
"""


def wall(argv: list[str], cwd: Path) -> float:
    start = time.time()
    subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    return time.time() - start


def first_step(manifest: Path, out: str) -> tuple[float, dict[str, Any]]:
    code = FIRST_STEP.format(heavy=HEAVY, manifest=str(manifest), out=out)
    start = time.time()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return float(report["at"]) - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description="How long the command line takes to start.")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    agilerl = [sys.executable, "-m", "agilerl"]
    with tempfile.TemporaryDirectory() as tmp:
        refused = Path(tmp) / "refused.yaml"
        text = (ROOT / "configs" / "ppo.yaml").read_text()
        refused.write_text(text.replace("max_steps:", "max_stepz:"))
        figures = {
            "train, refused manifest": [
                wall([*agilerl, "train", str(refused)], ROOT) for _ in range(args.runs)
            ],
            "validate configs/ppo.yaml": [
                wall([*agilerl, "validate", "configs/ppo.yaml"], ROOT) for _ in range(args.runs)
            ],
        }
        # What no CartPole run can start without: torch, and torch._dynamo, which
        # torch.optim imports when the first optimizer is built.
        figures["floor: import torch, torch._dynamo, gymnasium"] = [
            wall([sys.executable, "-c", "import torch, torch._dynamo, gymnasium"], ROOT)
            for _ in range(args.runs)
        ]
        steps = [
            first_step(ROOT / "configs" / "ppo.yaml", os.path.join(tmp, f"run{i}"))
            for i in range(args.runs)
        ]
        figures["train configs/ppo.yaml, to the first step"] = [s for s, _ in steps]
    for name, seconds in figures.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"{name:50s} median {statistics.median(seconds):6.2f} s  ({runs})")
    report = steps[-1][1]
    print(
        f"at the first step: {report['modules']} modules imported, torch "
        f"{'in' if report['torch'] else 'not in'} them; heavy stacks: "
        f"{', '.join(report['heavy']) or 'none'}"
    )


if __name__ == "__main__":
    main()
