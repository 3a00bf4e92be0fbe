"""Read back what evolution did: `python examples/tutorials/hpo/history.py runs/hpo`.

``history.json`` holds one record per generation; each agent's record has its index (an
agent's identity: a child gets a new one), fitness, hyperparameters and the mutation it
received before the generation, ``None (elite)`` for the one kept as it was.
"""

import json
import sys
from pathlib import Path

run = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/hpo")
history = json.loads((run / "history.json").read_text())
for generation in history:
    agents = sorted(generation["agents"], key=lambda a: a["fitness"] or 0.0, reverse=True)
    print(f"generation {generation['generation']}  ({generation['steps']:,} steps per agent)")
    for a in agents:
        lr = a["hyperparameters"]["lr"]
        print(f"  agent {a['index']:>2}  fitness {a['fitness']:6.1f}  lr {lr:.4g}  {a['mutation']}")
best = max(a["fitness"] for g in history for a in g["agents"])
print(f"best fitness {best:.1f}; plot: {run / 'fitness.png'}")
