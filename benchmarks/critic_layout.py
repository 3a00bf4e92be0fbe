"""Where the critic reads the action: this engine's layout against CleanRL's and SB3's.

Usage: ``python benchmarks/critic_layout.py [td3-hopper|ddpg-hopper|...] --layout
head|input [--steps 30000] [--seeds 0,1,2]``.

This engine's ``ContinuousQNetwork`` (as AgileRL's) computes ``Q(s, a) = head([a,
encoder(s)])``: the action enters after a layer that has seen only the observation.
CleanRL's and SB3's critics read ``[s, a]`` at their first layer. ``--layout input``
swaps in, for this script's runs only, a critic of that layout (:class:`InputActionQ`: the
encoder built on the joined observation and action, the head on its output); ``head``
runs the engine as it is. Each run is ``benchmarks/standard_tasks.py``'s one-agent run of
the task's manifest, evaluated every 10,000 steps; printed per seed: the evaluation
returns. The Hopper runs of 2026-12-04 found the actor saturated at 30k steps with the
engine's layout and not with this one, and this one behind at 50k (docs/benchmarks.md,
TD3 and DDPG on Hopper).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
import standard_tasks
import torch
from gymnasium import spaces
from torch import nn

from agilerl.algorithms import ddpg
from agilerl.networks.networks import ContinuousQNetwork


class InputActionQ(ContinuousQNetwork):
    """``Q(s, a) = head(encoder([s, a]))`` for a flat Box observation: the encoder is
    built on the joined space, and ``encoder`` is an identity so that DDPG's code, which
    encodes the observation and then calls :meth:`from_latent`, passes the observation
    through to :meth:`from_latent`, which joins the action there."""

    def __init__(self, observation_space: spaces.Box, action_space: spaces.Box, spec: Any) -> None:
        self.observation_only = observation_space
        joined = spaces.Box(
            np.concatenate([observation_space.low.ravel(), action_space.low.ravel()]),
            np.concatenate([observation_space.high.ravel(), action_space.high.ravel()]),
            dtype=np.float32,
        )
        super().__init__(joined, action_space, spec)
        self.body = self.encoder
        self.encoder = nn.Identity()

    def constructor_args(self) -> tuple[spaces.Space, spaces.Space | None]:
        return (self.observation_only, self.action_space)

    def head_extra_inputs(self) -> int:
        return 0

    def from_latent(self, latent: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        action = action.to(latent).reshape(latent.shape[0], -1)
        return self.head(self.body(torch.cat([latent, action], dim=1)))

    def forward(self, obs: Any, action: torch.Tensor) -> torch.Tensor:
        return self.from_latent(obs, action)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=sorted(standard_tasks.TASKS))
    parser.add_argument("--layout", choices=("head", "input"), required=True)
    parser.add_argument("--steps", type=int, default=30_000)
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    if args.layout == "input":
        ddpg.ContinuousQNetwork = InputActionQ  # type: ignore[misc]  # DDPG and TD3 build it
    task = standard_tasks.TASKS[args.task]
    for seed in (int(s) for s in args.seeds.split(",")):
        run = standard_tasks.ours(task, seed, args.steps, False, min(10_000, args.steps))
        returns = " / ".join(f"{r:.1f}" for r in run["best"])
        print(f"{args.task} critic reads the action at its {args.layout}, seed {seed}: "
              f"{returns} at {run['steps']} steps ({run['seconds']:.0f} s)", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
