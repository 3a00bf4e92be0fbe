"""Tracking from Python: TensorBoard and W&B (offline) from the manifest's training
section, and a callback of your own that watches every generation and stops the run.

Then the TensorBoard event files are read back, as TensorBoard itself reads them.
"""

import os
from pathlib import Path

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from agilerl import LocalTrainer
from agilerl.training.callbacks import Callback

os.environ.setdefault("WANDB_MODE", "offline")  # the manifest says offline too: belt and braces
os.environ.setdefault("WANDB_SILENT", "true")


class StopAtTarget(Callback):
    """Print each agent's evaluation, and stop once a generation's best reaches ``target``."""

    def __init__(self, target: float) -> None:
        self.target = target

    def on_evaluation(self, agent, record, state):
        print(f"  agent {record['index']}: fitness {record['fitness']:.1f}")

    def on_generation(self, state):
        best = max(a["fitness"] for a in state.history[-1]["agents"])
        print(f"generation {state.history[-1]['generation']}: best {best:.1f}")
        return best < self.target  # False stops the run (its outputs are written as usual)


trainer = LocalTrainer.from_manifest(Path(__file__).with_name("tracking.yaml"))
trainer.train(verbose=False, output_dir="runs/tracking", force=True, callbacks=[StopAtTarget(250)])
print("the run ended:", trainer.state.finished)

events = EventAccumulator("runs/tb/tracking")
events.Reload()
tags = events.Tags()["scalars"]
print(len(tags), "scalar tags, e.g.", [t for t in tags if t.startswith("eval/")])
print(
    "eval/best_fitness:", [(e.step, round(e.value, 1)) for e in events.Scalars("eval/best_fitness")]
)
print("W&B offline runs:", sorted(p.name for p in Path("wandb").glob("offline-run-*")))
