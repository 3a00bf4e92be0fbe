"""Write the tutorial's tables: `python make_tables.py` (already run; the CSVs are committed).

A made-up choice: which of three routes is fastest to work, from the hour of departure
(0-1 over 6:00-10:00), the rain (0-1) and whether the bridge is open (0 or 1). Any table
of numbers with a column of labels works the same way.
"""

import csv
from pathlib import Path

import numpy as np

rng = np.random.default_rng(0)
here = Path(__file__).parent
rows, labels = [], []
for _ in range(300):
    hour, rain, bridge = rng.random(), rng.random(), int(rng.random() < 0.7)
    if bridge and hour < 0.5:
        route = "bridge"  # early and open: the bridge
    elif rain > 0.6:
        route = "tram"  # wet: the tram
    else:
        route = "ring_road"
    rows.append((round(hour, 3), round(rain, 3), bridge))
    labels.append(route)

with open(here / "features.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["hour", "rain", "bridge_open"])
    writer.writerows(rows)
with open(here / "targets.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["route"])
    writer.writerows([label] for label in labels)
print({label: labels.count(label) for label in sorted(set(labels))})
