"""How fast manifests validate, YAML parsing excluded.

Loads every valid manifest of configs/ and tests/agilerl_manifests/ once, then times
validation alone: the pydantic models (what `agilerl validate` and training use) and,
for comparison, the Python jsonschema validator on the same documents.

    python benchmarks/validate_manifests.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from agilerl.documents import load_document
from agilerl.models import parse_manifest
from agilerl.models.validation import SpecError
from agilerl.schema import validator_for

ROOT = Path(__file__).resolve().parents[1]


def documents() -> list[dict]:
    docs = []
    for path in sorted((ROOT / "configs").glob("*.yaml")) + sorted(
        (ROOT / "tests" / "agilerl_manifests").rglob("*.yaml")
    ):
        data, _ = load_document(path)
        try:
            parse_manifest(data)
        except SpecError:
            continue  # refused manifests are not what a user validates in a loop
        docs.append(data)
    return docs


def rate(check, docs: list[dict], seconds: float) -> tuple[float, int]:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for doc in docs:
            check(doc)
        done += len(docs)
    return done / (time.perf_counter() - start), done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per validator")
    args = parser.parse_args()
    docs = documents()
    print(
        f"{len(docs)} valid manifests, validated repeatedly for {args.seconds:.0f} s each (YAML parsing excluded)"
    )
    schema = validator_for("TrainingManifest")
    for label, check in (
        ("pydantic (agilerl.models)", parse_manifest),
        ("jsonschema (Python)", schema.validate),
    ):
        per_second, total = rate(check, docs, args.seconds)
        print(
            f"  {label:28s} {per_second:8.0f} manifests/s  ({1e3 / per_second:.2f} ms each, {total} validations)"
        )


if __name__ == "__main__":
    main()
