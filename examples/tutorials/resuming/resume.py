"""Exact resume: a run stopped half-way and resumed gives the run that never stopped.

Run A trains the manifest's whole budget in one go. Run B trains half of it, ends (its
checkpoint written, as a killed run's last generation would leave it), then a new trainer
resumes B from its checkpoint with the whole budget. Their per-generation histories are
equal: every reset is seeded from (run seed, generation, slot), and the checkpoint holds
weights, optimisers, replay buffer, RNG states and the HPO operators.
"""

import json
from pathlib import Path

from agilerl import LocalTrainer

MANIFEST = Path(__file__).with_name("cartpole.yaml")


def history(run: str) -> list[list[tuple[int, float]]]:
    records = json.loads((Path(run) / "history.json").read_text())
    return [[(a["index"], a["fitness"]) for a in g["agents"]] for g in records]


# A: the whole budget (2,000 steps per agent, 4 generations).
LocalTrainer.from_manifest(MANIFEST).train(verbose=False, output_dir="runs/resume-a", force=True)

# B: half the budget, then resumed to the whole.
half = LocalTrainer.from_manifest(MANIFEST)
half.training = half.training.model_copy(update={"max_steps": 1000})
half.train(verbose=False, output_dir="runs/resume-b", force=True)
print("B stopped after", len(history("runs/resume-b")), "generations")
LocalTrainer.from_manifest(MANIFEST).train(verbose=False, output_dir="runs/resume-b", resume=True)

print("A:", history("runs/resume-a"))
print("B:", history("runs/resume-b"))
assert history("runs/resume-a") == history("runs/resume-b")
print("the resumed run is the uninterrupted one")
