"""One learning step of P agents: one after another against one cohort step.

Usage: ``python benchmarks/cohort_learn_step.py [dqn|td3 ...] [--population 4]
[--width 64] [--batch 64] [--steps 300] [--profile]``.

For each algorithm, P agents with layers ``--width`` wide learn from random batches of
``--batch`` rows: each agent's own ``learn`` in turn, then the same agents' cohort
(:class:`~agilerl.cohorts.learners.ReplayCohort`) on the joined batch. Printed: milliseconds
per round (one step of every agent) both ways and their ratio, one torch thread; with
``--profile``, torch's profiler table of the cohort step's operations (where the time of
a step that is not matrix products goes). Only the learning step is timed: no
environments, no acting, no replay sampling.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from gymnasium import spaces

from agilerl.algorithms.dqn import DQN
from agilerl.algorithms.td3 import TD3
from agilerl.cohorts.learners import ReplayCohort
from agilerl.testing.transitions import random_transitions


def _net(width: int, layer_norm: bool) -> dict[str, Any]:
    return {
        "latent_dim": width,
        "encoder_config": {"hidden_size": [width], "layer_norm": layer_norm},
        "head_config": {"hidden_size": [width], "layer_norm": layer_norm},
    }


def _dqn(count: int, width: int, batch: int) -> tuple[list[Any], Callable[[int], dict]]:
    """CartPole-sized DQN agents (layer norm on, as the reference's manifest)."""
    agents = [
        DQN(spaces.Box(-1.0, 1.0, (4,)), spaces.Discrete(2), net_config=_net(width, True),
            batch_size=batch, seed=i)
        for i in range(count)
    ]  # fmt: skip
    generator = torch.Generator().manual_seed(0)
    return agents, lambda rows: random_transitions(rows, generator, actions=2, done_rate=0.05)


def _td3(count: int, width: int, batch: int) -> tuple[list[Any], Callable[[int], dict]]:
    """Pendulum-sized TD3 agents (no layer norm, as ``benchmarks/td3_pendulum.yaml``)."""
    agents = [
        TD3(spaces.Box(-1.0, 1.0, (3,)), spaces.Box(-2.0, 2.0, (1,)),
            net_config=_net(width, False), batch_size=batch, seed=i)
        for i in range(count)
    ]  # fmt: skip
    generator = torch.Generator().manual_seed(0)

    def draw(rows: int) -> dict[str, torch.Tensor]:
        drawn = random_transitions(rows, generator, obs_dim=3, done_rate=0.0)
        drawn["action"] = torch.rand(rows, 1, generator=generator) * 4 - 2
        return drawn

    return agents, draw


ALGORITHMS = {"dqn": _dqn, "td3": _td3}


def ms_per_call(step: Callable[[], Any], steps: int, warmup: int = 20) -> float:
    """Milliseconds per call of ``step`` over ``steps`` calls, after ``warmup`` untimed
    ones (allocations, lazy state)."""
    for _ in range(warmup):
        step()
    started = time.perf_counter()
    for _ in range(steps):
        step()
    return 1000 * (time.perf_counter() - started) / steps


def measure(name: str, population: int, width: int, batch: int, steps: int, prof: bool) -> None:
    """Time (and with ``prof`` profile) one algorithm's round both ways; print it."""
    agents, draw = ALGORITHMS[name](population, width, batch)
    own = draw(batch)
    alone = ms_per_call(lambda: [agent.learn(own) for agent in agents], steps)
    cohort = ReplayCohort(agents)
    joined, live = draw(batch * len(agents)), np.ones(len(agents), dtype=bool)
    generators = [torch.Generator().manual_seed(i) for i in range(len(agents))]
    together = ms_per_call(lambda: cohort.learn(joined, live, generators), steps)
    print(
        f"{name.upper()}: {len(agents)} agents, {width} wide, batch {batch}, one thread: "
        f"{alone:.2f} ms one after another, {together:.2f} ms as a cohort "
        f"({alone / together:.2f}x)",
        flush=True,
    )
    if prof:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as profiled:
            for _ in range(50):
                cohort.learn(joined, live, generators)
        print(profiled.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("algorithms", nargs="*", metavar="ALGO", help="dqn, td3 (default both)")
    parser.add_argument("--population", type=int, default=4)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    unknown = set(args.algorithms) - set(ALGORITHMS)
    if unknown:
        parser.error(f"unknown algorithm(s) {sorted(unknown)}; choose from {list(ALGORITHMS)}")
    torch.set_num_threads(1)
    for name in args.algorithms or list(ALGORITHMS):
        measure(name, args.population, args.width, args.batch, args.steps, args.profile)


if __name__ == "__main__":
    main()
