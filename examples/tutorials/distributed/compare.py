"""Compare two runs' histories: `python examples/tutorials/distributed/compare.py runs/dist-1 runs/dist-2`.

With the same seed and ``training.cohorts: false``, one process and N processes give the
same generations: fitness, agent indices, mutations and metrics, to the bit.
"""

import json
import sys
from pathlib import Path

KEYS = ("index", "fitness", "mutation", "metrics", "hyperparameters")


def generations(run: str) -> list[list[dict]]:
    history = json.loads((Path(run) / "history.json").read_text())
    return [[{k: a[k] for k in KEYS} for a in g["agents"]] for g in history]


one, many = (generations(run) for run in sys.argv[1:3])
for number, (a, b) in enumerate(zip(one, many, strict=True)):
    print(
        f"generation {number}: fitness {[x['fitness'] for x in a]} vs {[x['fitness'] for x in b]}"
    )
assert one == many, "the histories differ"
print(f"the same {len(one)} generations on both")
