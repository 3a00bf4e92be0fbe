"""Calibrates the pre-flight's per-agent memory against what building agents really costs.

Usage: ``python benchmarks/preflight_calibration.py [--agents N]``. For each case (an
algorithm and a network size, on a small Gymnasium environment) a fresh subprocess
builds the run's environment and one warm-up agent, reads its resident set size
(``/proc/self/statm``), then builds ``N`` more agents exactly as a run does
(``LocalTrainer._build_agent``), gives every optimised parameter a gradient and takes one
optimiser step (so Adam's moments exist, as after the first learning step), and reads
the resident set size again. The growth divided by ``N`` is the measured cost of one
agent; the pre-flight's tensor count (:func:`agilerl.training.preflight.tensor_bytes`,
on the meta device) is printed beside it, and the difference is the per-agent overhead
of the Python objects (modules, optimisers, generators) that no tensor count sees.

:data:`agilerl.training.preflight.AGENT_OVERHEAD_BYTES` is the largest overhead this
measures, rounded up (the figures it was set from are in its comment).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys

CASES = {
    "DQN CartPole [64, 64]": ("DQN", "CartPole-v1", [64, 64]),
    "DQN CartPole [256, 256]": ("DQN", "CartPole-v1", [256, 256]),
    "PPO CartPole [64, 64]": ("PPO", "CartPole-v1", [64, 64]),
    "TD3 Pendulum [64, 64]": ("TD3", "Pendulum-v1", [64, 64]),
    "RainbowDQN CartPole [64, 64]": ("RainbowDQN", "CartPole-v1", [64, 64]),
}


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(name: str, env_id: str, hidden: list[int], agents: int) -> dict[str, float]:
    import torch

    from agilerl.models.manifest import parse_manifest
    from agilerl.trainer import LocalTrainer
    from agilerl.training.preflight import meta_agent, tensor_bytes

    doc = {
        "algorithm": {"name": name},
        "environment": {"name": env_id, "num_envs": 1, "sync": True},
        "training": {"max_steps": 1000, "pop_size": agents},
        "network": {
            "encoder_config": {"hidden_size": hidden},
            "head_config": {"hidden_size": [64]},
        },
    }
    trainer = LocalTrainer.from_manifest(parse_manifest(doc))
    ctx = trainer.context
    env = trainer.family.make_env(ctx)
    meta = meta_agent(ctx, env)
    counted, networks = tensor_bytes(meta), len(meta._network_attrs())

    def build(index: int) -> object:
        agent = ctx.agent(env, index, index)
        for attr, (nets, _) in agent.optimizer_specs.items():
            for net in nets:
                for param in getattr(agent, net).parameters():
                    param.grad = torch.zeros_like(param)
            getattr(agent, attr).step()
        return agent

    keep = [build(0)]  # warm-up: lazy kernels, caches, first-use imports
    gc.collect()
    before = rss()
    keep += [build(i) for i in range(1, agents + 1)]
    gc.collect()
    measured = (rss() - before) / agents
    overhead = measured - counted
    return {"counted": counted, "measured": measured, "overhead": overhead, "networks": networks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--case", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:  # one case, in its own process: nothing an earlier case built counts
        print(json.dumps(measure(*CASES[args.case], args.agents)))
        return
    for case in CASES:
        out = subprocess.run(
            [sys.executable, __file__, "--agents", str(args.agents), "--case", case],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found = json.loads(out.strip().splitlines()[-1])
        print(
            f"{case:32} counted {found['counted'] / 1024:8.1f} KiB  measured "
            f"{found['measured'] / 1024:8.1f} KiB  overhead {found['overhead'] / 1024:7.1f} KiB "
            f"({found['overhead'] / found['networks'] / 1024:.1f} KiB for each of {found['networks']} networks)"
        )


if __name__ == "__main__":
    main()
