"""What experience sharing costs per turn, against the size of the buffer and of the turn.

A full buffer (uniform, or prioritised) of ``size`` rows receives a turn of ``turn`` rows
in vector steps of 8 (a prioritised one also samples 64 rows and updates their
priorities after each), then ``end_turn`` (journal + undo) and the ``merge`` of that one
journal. Printed, best of 3: the turn's writes outside a turn, the extra time the turn's writes take while a turn is open
(the undo log, against the same writes outside a turn), ``end_turn``, ``merge``, and, for
scale, one ``copy.deepcopy`` of the buffer (what a turn would cost if it snapshotted the
buffer instead). Run::

    OMP_NUM_THREADS=1 python benchmarks/experience_sharing.py
"""

from __future__ import annotations

import copy
import math
import time

import torch

from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.training.sharing import ExperienceSharing

ENVS = 8
OBS = 84 * 84  # a flattened Atari frame, uint8


def _step(generator: torch.Generator) -> dict[str, torch.Tensor]:
    obs = torch.randint(0, 255, (ENVS, OBS), dtype=torch.uint8, generator=generator)
    return {
        "obs": obs,
        "action": torch.zeros(ENVS, dtype=torch.int64),
        "reward": torch.rand(ENVS, generator=generator),
        "next_obs": obs,
        "done": torch.zeros(ENVS),
    }


def _full(kind: type[ReplayBuffer], size: int) -> ReplayBuffer:
    buffer = kind(size)
    generator = torch.Generator().manual_seed(0)
    while len(buffer) < size:
        buffer.store(_step(generator))
    return buffer


def _writes(buffer: ReplayBuffer, steps: list[dict[str, torch.Tensor]]) -> float:
    start = time.perf_counter()
    for step in steps:
        buffer.store(step)
        if isinstance(buffer, PrioritizedReplayBuffer):
            batch = buffer.sample(64)
            buffer.update_priorities(batch["indices"], torch.rand(64))
    return time.perf_counter() - start


def measure(kind: type[ReplayBuffer], size: int, turn: int, repeats: int = 3) -> dict[str, float]:
    """The best of ``repeats`` generations of one turn each (the machine is shared)."""
    buffer = _full(kind, size)
    generator = torch.Generator().manual_seed(1)
    steps = [_step(generator) for _ in range(turn // ENVS)]
    sharing = ExperienceSharing(buffer)
    best = {"plain": math.inf, "turn": math.inf, "end": math.inf, "merge": math.inf}
    for _ in range(repeats):
        torch.manual_seed(0)
        plain = _writes(buffer, steps)  # the same writes outside any turn
        torch.manual_seed(0)
        sharing.begin_turn(0)
        in_turn = _writes(buffer, steps)
        start = time.perf_counter()
        sharing.end_turn(0)
        end = time.perf_counter() - start
        journals = sharing.take()
        start = time.perf_counter()
        sharing.merge(journals)
        merge = time.perf_counter() - start
        for key, value in (("plain", plain), ("turn", in_turn), ("end", end), ("merge", merge)):
            best[key] = min(best[key], value)
    start = time.perf_counter()
    copy.deepcopy(buffer)
    return {**best, "undo": best["turn"] - best["plain"], "copy": time.perf_counter() - start}


def main() -> None:
    torch.set_num_threads(1)
    print(f"{'buffer':>12} {'rows':>8} {'turn':>6} {'writes ms':>9} {'undo ms':>8} {'end ms':>7} "
          f"{'merge ms':>8} {'deepcopy ms':>11}")  # fmt: skip
    for kind in (ReplayBuffer, PrioritizedReplayBuffer):
        for size, turn in ((10_000, 1_000), (100_000, 1_000), (100_000, 10_000)):
            figures = measure(kind, size, turn)
            print(
                f"{kind.__name__[:12]:>12} {size:>8,} {turn:>6,} {figures['plain'] * 1e3:>9.1f} "
                f"{figures['undo'] * 1e3:>8.1f} "
                f"{figures['end'] * 1e3:>7.1f} {figures['merge'] * 1e3:>8.1f} "
                f"{figures['copy'] * 1e3:>11.1f}"
            )


if __name__ == "__main__":
    main()
