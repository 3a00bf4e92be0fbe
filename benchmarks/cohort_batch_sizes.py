"""Why ``batch_size`` is not part of a value cohort's key: padding against a cohort per
batch size.

Usage: ``python benchmarks/cohort_batch_sizes.py [--sizes 32,64,128,256] [--width 64]
[--updates 300]``.

Four DQN agents whose batch sizes differ (as after HPO mutates them) can learn either

* **padded** (what the engine does): as one cohort, every agent's batch padded to the
  largest (the padded rows masked out of the loss: their arithmetic is spent all the
  same), or
* **keyed**: one cohort per batch size.

Printed: milliseconds per learning round (one update of every agent) both ways, one
torch thread, CartPole-sized observations, layers ``--width`` wide. The padded cohort's
cost is measured by a cohort of equal batches of the largest size, which is what padding
computes.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from cohort_learn_step import ms_per_call
from gymnasium import spaces

from agilerl.algorithms.dqn import DQN
from agilerl.cohorts.learners import ReplayCohort
from agilerl.testing.transitions import random_transitions

OBS = spaces.Box(-1.0, 1.0, (4,))
ACTIONS = spaces.Discrete(2)


def _agents(count: int, width: int) -> list[DQN]:
    net = {
        "latent_dim": width,
        "encoder_config": {"hidden_size": [width]},
        "head_config": {"hidden_size": [width]},
    }
    return [DQN(OBS, ACTIONS, index=i, net_config=net, seed=i) for i in range(count)]


def _batch(rows: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    return random_transitions(rows, generator, actions=2, done_rate=0.05)


def _time(rounds: list[tuple[ReplayCohort, dict[str, torch.Tensor]]], updates: int) -> float:
    """Milliseconds per round of ``rounds`` (each a cohort and its joined batch)."""

    def round_() -> None:
        for cohort, batch in rounds:
            cohort.learn(batch, np.ones(len(cohort.agents), dtype=bool), [])

    return ms_per_call(round_, updates, warmup=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="32,64,128,256")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--updates", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = [int(s) for s in args.sizes.split(",")]
    generator = torch.Generator().manual_seed(0)
    agents = _agents(len(sizes), args.width)
    largest = max(sizes)
    padded = ReplayCohort(agents)
    joined = {
        key: torch.cat([_batch(largest, generator)[key] for _ in sizes])
        for key in _batch(1, generator)
    }
    padded_ms = _time([(padded, joined)], args.updates)
    keyed = [
        (ReplayCohort([agent]), _batch(size, generator))
        for agent, size in zip(agents, sizes, strict=True)
    ]
    keyed_ms = _time(keyed, args.updates)
    print(f"{len(sizes)} DQN agents of batch sizes {sizes}, layers {args.width} wide, one thread")
    print(f"  padded to {largest} in one cohort: {padded_ms:6.2f} ms per round")
    print(f"  one cohort per batch size:        {keyed_ms:6.2f} ms per round")
    print(f"  padding costs {padded_ms / keyed_ms:.2f}x the keyed cohorts")


if __name__ == "__main__":
    main()
