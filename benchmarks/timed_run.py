"""One benchmark run of a manifest: throughput, time to a score and peak memory.

Shared by ``train_cartpole.py`` and ``td3_pendulum.py`` (run as scripts, so this module
is imported from their directory).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

from agilerl.files.documents import load_document
from agilerl.models.manifest import parse_manifest
from agilerl.trainer import LocalTrainer
from agilerl.training.callbacks import Callback


def run_manifest(
    manifest: Path, score: float, steps: int | None = None, use_async: bool = False
) -> dict[str, float | None]:
    """Train ``manifest`` (``steps`` per agent if given; ``use_async``: AsyncVectorEnv
    workers) and measure: env steps (training and evaluation, all agents), wall and CPU
    seconds of this process, the best fitness, the steps per agent, env steps and seconds
    at which an agent's evaluation first reached ``score`` (None if never), the peak
    resident memory of this process and of its largest child process (MiB), and the
    run's per-generation history."""
    data, _ = load_document(manifest)
    if steps is not None:
        data["training"]["max_steps"] = steps
    if use_async:
        data["environment"]["sync"] = False
        data["environment"]["vectorize"] = "async"  # not native either
    trainer = LocalTrainer.from_manifest(parse_manifest(data))
    reached: dict[str, float] = {}
    started, cpu = time.perf_counter(), time.process_time()

    class FirstToScore(Callback):
        def on_generation(self, state) -> None:
            record = state.history[-1]
            if not reached and max(a["fitness"] for a in record["agents"]) >= score:
                reached.update(
                    steps=record["steps"],
                    env_steps=record["env_steps"],
                    seconds=time.perf_counter() - started,
                )

    trainer.train(verbose=False, callbacks=[FirstToScore()])
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    state = trainer.state
    return {
        "env_steps": state.env_steps,
        "wall_s": wall,
        "cpu_s": cpu,
        "env_steps_per_s": state.env_steps / wall,
        "best": state.best_fitness,
        "steps_to_score": reached.get("steps"),
        "env_steps_to_score": reached.get("env_steps"),
        "seconds_to_score": reached.get("seconds"),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_peak_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "history": state.history,  # per generation: every agent's fitness, steps, ...
    }
