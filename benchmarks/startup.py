"""How long the command line takes to start: wall seconds, each the median of --runs
fresh processes, from just before the process is started:

1. ``agilerl train`` on a refused manifest (``training.max_steps`` misspelt) until it exits;
2. ``agilerl validate configs/ppo.yaml`` until it exits;
3. ``agilerl train configs/ppo.yaml`` (PPO on CartPole-v1) until its first environment
   step: the child replaces CartPole's ``step`` with one that prints the time and ends
   the process, and reports how many modules it had imported by then and which
   of the heavy stacks a CartPole run has no use for were among them;
4. where the time to that first step goes: one more such run under ``python -X
   importtime``, its imports in all and the shares of torch and of torch._dynamo (which
   torch.optim imports when it builds the first optimizer); importtime's own overhead
   makes these seconds larger than the wall figures.

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


def import_seconds(manifest: Path, out: str) -> dict[str, float]:
    """Seconds of imports before the first step (``-X importtime``): all of them (the
    top-level ones' cumulative times), and torch's, torch._dynamo's, gymnasium's."""
    code = FIRST_STEP.format(heavy=HEAVY, manifest=str(manifest), out=out)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = {"all": 0.0, "torch": 0.0, "torch._dynamo": 0.0, "gymnasium": 0.0}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line.split("|")
        if name.startswith(" ") and not name.startswith("  "):  # imported at top level
            seconds["all"] += int(cumulative) / 1e6
        if name.strip() in seconds:
            seconds[name.strip()] += int(cumulative) / 1e6
    return seconds


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
        steps = [
            first_step(ROOT / "configs" / "ppo.yaml", os.path.join(tmp, f"run{i}"))
            for i in range(args.runs)
        ]
        figures["train configs/ppo.yaml, to the first step"] = [s for s, _ in steps]
        imports = import_seconds(ROOT / "configs" / "ppo.yaml", os.path.join(tmp, "imports"))
    for name, seconds in figures.items():
        runs = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"{name:45s} median {statistics.median(seconds):6.2f} s  ({runs})")
    report = steps[-1][1]
    print(
        f"at the first step: {report['modules']} modules imported, torch "
        f"{'in' if report['torch'] else 'not in'} them; heavy stacks: "
        f"{', '.join(report['heavy']) or 'none'}"
    )
    print(
        f"imports before the first step (-X importtime): {imports['all']:.2f} s, of which "
        + ", ".join(
            f"{name} {imports[name]:.2f} s" for name in ("torch", "torch._dynamo", "gymnasium")
        )
    )


if __name__ == "__main__":
    main()
