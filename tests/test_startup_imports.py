"""What the command line imports before it answers: a refused manifest is refused before
torch loads, and a CartPole run reaches its first step without the stacks it does not
use (LLM, multi-agent, offline data, plots, TensorBoard). Each case runs in a fresh
interpreter and reads ``sys.modules`` there; nothing is timed (``benchmarks/startup.py``
gives the seconds)."""

from __future__ import annotations

import json
import subprocess
import sys

from support import ROOT

#: What no start of a CartPole PPO run needs.
NOT_FOR_CARTPOLE = (
    "transformers",
    "accelerate",
    "peft",
    "datasets",
    "pettingzoo",
    "matplotlib",
    "tensorboard",
    "h5py",
    "scipy",
    "agilerl.llm",
    "agilerl.families.llm",
    "agilerl.families.multi_agent",
    "agilerl.families.offline",
    "agilerl.families.bandits",
)
#: What answering from the manifest alone needs none of.
ENGINE = ("torch", "numpy", "gymnasium", *NOT_FOR_CARTPOLE)

# The child prints the watched modules it holds when the command ends.
AT_EXIT = """
import json, sys
from agilerl.cli import main
code = main({argv!r})
print(json.dumps({{"code": code, "loaded": [m for m in {watched!r} if m in sys.modules]}}))
"""

# The child prints the watched modules it holds at the first step of a CartPole
# environment (one or a natively vectorised batch), and ends there.
AT_FIRST_STEP = """
import json, os, sys
from gymnasium.envs.classic_control import cartpole
def step(self, *args, **kwargs):
    print(json.dumps({{"loaded": [m for m in {watched!r} if m in sys.modules]}}))
    sys.stdout.flush()
    os._exit(0)
cartpole.CartPoleEnv.step = cartpole.CartPoleVectorEnv.step = step
from agilerl.cli import main
main({argv!r})
"""


def _child(code: str, cwd) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_refused_manifest_is_answered_before_the_engine_loads(tmp_path):
    manifest = tmp_path / "refused.yaml"
    text = (ROOT / "configs/ppo.yaml").read_text()
    manifest.write_text(text.replace("max_steps:", "max_stepz:"))  # a typo'd field
    report = _child(AT_EXIT.format(argv=["train", str(manifest)], watched=ENGINE), tmp_path)
    assert report == {"code": 1, "loaded": []}


def test_validate_needs_no_torch(tmp_path):
    argv = ["validate", str(ROOT / "configs/ppo.yaml")]
    report = _child(AT_EXIT.format(argv=argv, watched=("torch", *NOT_FOR_CARTPOLE)), tmp_path)
    assert report == {"code": 0, "loaded": []}


def test_a_cartpole_run_starts_without_the_stacks_it_does_not_use(tmp_path):
    argv = [
        "train", str(ROOT / "configs/ppo.yaml"), "--out", str(tmp_path / "run"), "--quiet",
        "--set", "training.pop_size=1", "--set", "environment.num_envs=1",
    ]  # fmt: skip
    report = _child(AT_FIRST_STEP.format(argv=argv, watched=NOT_FOR_CARTPOLE), tmp_path)
    assert report == {"loaded": []}
