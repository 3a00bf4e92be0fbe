"""Forward-pass time of the default MLP and CNN networks, per batch of 256.

Usage: ``python benchmarks/network_forward.py [--runs N] [--batch B]``. Prints the median
wall time of ``N`` forward passes under ``torch.no_grad()`` (after a few warm-up passes),
with torch's CPU thread count as set by torch (``torch.get_num_threads()``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from gymnasium import spaces

from agilerl.models import QNetworkSpec
from agilerl.networks import QNetwork, infer_encoder_spec

CASES = {
    "mlp (obs 8, hidden [64, 64])": spaces.Box(-1.0, 1.0, (8,)),
    "cnn (obs 3x84x84, channels [32, 64], kernels [8, 4], strides [4, 2])": spaces.Box(
        0.0, 1.0, (3, 84, 84)
    ),
}


def median_forward_ms(space: spaces.Box, batch: int, runs: int) -> float:
    spec = QNetworkSpec(
        encoder_config=infer_encoder_spec(space).model_dump(), head_config={"hidden_size": [64]}
    )
    net = QNetwork(space, spaces.Discrete(4), spec).eval()
    obs = torch.rand(batch, *space.shape)
    times = []
    with torch.no_grad():
        for i in range(runs + 3):
            start = time.perf_counter()
            net(obs)
            if i >= 3:
                times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, batch {args.batch}")
    for name, space in CASES.items():
        ms = median_forward_ms(space, args.batch, args.runs)
        print(f"{name}: median {ms:.3f} ms / forward ({args.runs} runs)")


if __name__ == "__main__":
    main()
