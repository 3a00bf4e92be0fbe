"""Memory of a 100k-transition replay buffer of Atari observations (4 stacked 84x84
uint8 frames), stored as transitions (``replay_buffer.storage: transitions``, every
field as given) and as frames (``storage: frames``, each frame once), with the time of
an add and of a sample.

The frame buffer is filled with 100k transitions of 8 environment copies whose episodes
last ``--episode`` steps on average (an episode's first transition stores k + 1 frames,
the others one): its pool is measured as allocated. The plain buffer's tensors are
allocated (``torch.empty``) and counted, not filled: filling them would touch 5.6 GB.

    OMP_NUM_THREADS=1 python benchmarks/replay_frames.py [--episode 200] [--size 100000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from agilerl.components.frame_replay import FrameReplayBuffer
from agilerl.components.replay_buffer import ReplayBuffer

K, FRAME, ENVS = 4, (84, 84), 8


def stream(episode: int, seed: int = 0):
    """Vector steps of ENVS frame-stacked copies with same-step autoreset."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (4096, *FRAME), dtype=np.uint8)  # reused: fast to draw
    obs = np.repeat(frames[rng.integers(4096, size=ENVS)][:, None], K, axis=1)
    while True:
        new = frames[rng.integers(4096, size=ENVS)]
        next_obs = np.concatenate([obs[:, 1:], new[:, None]], axis=1)
        done = rng.random(ENVS) < 1 / episode
        batch = (obs, rng.integers(0, 6, ENVS), np.zeros(ENVS, np.float32), next_obs, done)
        yield batch
        obs = next_obs.copy()
        for i in np.flatnonzero(done):
            obs[i] = frames[rng.integers(4096)]


def tensor_bytes(tree) -> int:
    if isinstance(tree, dict):
        return sum(tensor_bytes(v) for v in tree.values())
    return tree.numel() * tree.element_size()


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def timed(fn, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--episode", type=int, default=200, help="mean episode length")
    args = parser.parse_args()
    size = args.size

    plain = ReplayBuffer(size)
    steps = stream(args.episode)
    plain.store(
        dict(zip(("obs", "action", "reward", "next_obs", "done"), next(steps), strict=True))
    )
    plain_bytes = tensor_bytes(plain._storage)
    float_obs = 2 * size * K * FRAME[0] * FRAME[1] * 4  # obs and next_obs as float32

    frames = FrameReplayBuffer(size)
    start = time.perf_counter()
    for _ in range(size // ENVS):
        frames.add(*next(steps))
    fill = time.perf_counter() - start
    rows = tensor_bytes(frames._storage)
    pool = frames.frame_bytes()

    print(f"{size:,} transitions of {K}x{FRAME[0]}x{FRAME[1]} uint8, {ENVS} copies, "
          f"episodes of {args.episode} steps on average")  # fmt: skip
    print(f"  float32 observations (obs + next_obs):  {mib(float_obs)}")
    print(f"  storage: transitions (uint8 as given):  {mib(plain_bytes)}")
    print(
        f"  storage: frames:                        {mib(pool + rows)} "
        f"(pool {frames.capacity:,} frames = {mib(pool)}, rows {mib(rows)}): "
        f"{plain_bytes / (pool + rows):.1f}x less"
    )
    print(f"  filling the frame buffer: {fill:.1f} s ({size / fill:,.0f} transitions/s)")

    # Time per operation on buffers that are full (the plain one at 10k rows: the cost of
    # its add and sample does not grow with the size; the frame buffer's add reads the
    # oldest rows' references, so it is timed at full size).
    small = ReplayBuffer(10_000)
    for _ in range(10_000 // ENVS):
        small.add(*next(steps))
    batches = [next(steps) for _ in range(200)]  # the episodes go on, as in training
    for name, buffer in (("transitions (10k)", small), (f"frames ({size // 1000}k)", frames)):
        todo = iter(batches)
        add = timed(lambda b=buffer, todo=todo: b.add(*next(todo)), 200)
        sample = timed(lambda b=buffer: b.sample(32), 200)
        print(f"  {name}: add of {ENVS} rows {add:,.0f} us, sample of 32 {sample:,.0f} us")


if __name__ == "__main__":
    main()
