"""``agilerl validate``: check manifests (or other spec files) against the schema, list
the code a run of each would import, and say how its environment copies would run."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import agilerl.models as models
from agilerl.files.documents import DocumentError, dump_yaml, load_document, load_spec
from agilerl.guards.manifest_code import code_references
from agilerl.models.base import engine_lacks
from agilerl.models.env import RUN_REFUSALS
from agilerl.models.manifest import (
    TrainingManifest,
    dump_manifest,
    parse_manifest_with_deprecations,
)
from agilerl.models.validation import SpecError

MANIFEST = "TrainingManifest"


def spec_classes() -> dict[str, type[BaseModel]]:
    """Every public spec class of :mod:`agilerl.models`, by class name."""
    return {
        name: obj
        for name in models.__all__
        if isinstance(obj := getattr(models, name), type) and issubclass(obj, BaseModel)
    }


def _summary(spec: Any) -> str:
    if not isinstance(spec, TrainingManifest):
        return type(spec).__name__
    env = spec.environment
    return f"{spec.algorithm.name} on {getattr(env, 'name', None) or getattr(env, 'dataset', '?')}"


def _load_checked(path: str, spec_cls: Any, strict: bool) -> tuple[Any, list[Any]]:
    """The spec in file ``path`` (a manifest when ``spec_cls`` is None) and an issue per
    old spelling of a key it holds, read under its new name (``strict``: refused)."""
    if spec_cls is not None:
        return load_spec(spec_cls, path), []
    data, locate = load_document(path)
    manifest, deprecated = parse_manifest_with_deprecations(
        data, source=path, locate=locate, strict=strict
    )
    return manifest, deprecated


def run(args: argparse.Namespace) -> int:
    from agilerl.families.single_agent.vectorize import VectorizeError

    classes = spec_classes()
    if args.spec != MANIFEST and args.spec not in classes:
        known = ", ".join(sorted([MANIFEST, *classes]))
        print(f"agilerl: unknown spec {args.spec!r}; known: {known}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {}
    for path in args.files:
        try:
            spec_cls = None if args.spec == MANIFEST else classes[args.spec]
            spec, deprecated = _load_checked(path, spec_cls, args.strict)
        except DocumentError as err:
            report[path] = {"valid": False, "errors": [{"message": str(err)}]}
            if args.format == "text":
                print(err, file=sys.stderr)
        except SpecError as err:
            report[path] = {"valid": False, "errors": [_issue_json(issue) for issue in err.issues]}
            if args.format == "text":
                print(err, file=sys.stderr)
        else:
            # what a run of it would import: shown, not run
            code = code_references(spec, base_dir=Path(path).parent)
            try:
                vectorised = _vectorisation(spec)
            except VectorizeError as err:  # valid for the schema; every run would refuse it
                vectorised, refusal = None, str(err)
            else:
                refusal = run_refusal(spec)
            if refusal is not None:
                report[path] = {"valid": False, "errors": [{"message": refusal}]}
                if args.format == "text":
                    print(f"{path}: {refusal}", file=sys.stderr)
                continue
            report[path] = {"valid": True, "code": [ref.to_json() for ref in code]}
            if vectorised is not None:
                report[path]["environment"] = vectorised
            warnings = _engine_warnings(spec)
            if warnings:
                report[path]["warnings"] = warnings
            if deprecated:
                report[path]["deprecated"] = [_issue_json(issue) for issue in deprecated]
            if args.format == "text":
                print(f"{path}: valid ({_summary(spec)})")
                for issue in deprecated:
                    print(f"agilerl: warning: {issue.format(path)}", file=sys.stderr)
                for warning in warnings:
                    print(f"{path}: warning: {warning}", file=sys.stderr)
                for ref in code:
                    print(f"  {ref.line()}")
                if vectorised is not None:
                    print(f"  {vectorised}")
                if args.show:
                    print(dump_yaml(_dump(spec)), end="")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    return 0 if all(entry["valid"] for entry in report.values()) else 1


def _vectorisation(spec: Any) -> str | None:
    """How a manifest's Gymnasium environment copies would run (the line validate
    prints), None for a spec without one; a
    :class:`~agilerl.families.single_agent.vectorize.VectorizeError`
    when ``environment.sync`` and ``environment.vectorize`` disagree or ``native`` is not
    available (a run refuses the same)."""
    from agilerl.families.single_agent.vectorize import describe_vectorize

    if not isinstance(spec, TrainingManifest) or not hasattr(spec.environment, "vectorize"):
        return None
    return describe_vectorize(spec.environment)


def run_refusal(spec: Any) -> str | None:
    """What every run of a schema-valid manifest refuses before its first step, where
    its environment section alone tells (:data:`agilerl.models.env.RUN_REFUSALS`)."""
    if not isinstance(spec, TrainingManifest):
        return None
    check = RUN_REFUSALS.get(type(spec.environment))
    return None if check is None else check(spec.environment)


def _engine_warnings(spec: Any) -> list[str]:
    """What a valid manifest cannot do yet: an algorithm the engine does not train."""
    if not isinstance(spec, TrainingManifest):
        return []
    lacking = engine_lacks(spec.algorithm.name)
    return [lacking] if lacking else []


def _dump(spec: Any) -> dict[str, Any]:
    return (
        dump_manifest(spec) if isinstance(spec, TrainingManifest) else spec.model_dump(mode="json")
    )


def _issue_json(issue: Any) -> dict[str, Any]:
    line, column = issue.position or (None, None)
    return {"path": issue.dotted_path, "line": line, "column": column, "message": issue.message}


def add_parser(commands: Any) -> None:
    """The ``validate`` command."""
    validate = commands.add_parser(
        "validate", help="validate manifests (or other spec files); exit 1 if any is invalid"
    )
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument(
        "--spec",
        default=MANIFEST,
        help=f"spec the files hold (default {MANIFEST}), e.g. QNetworkSpec",
    )
    validate.add_argument("--format", choices=["text", "json"], default="text")
    validate.add_argument(
        "--show", action="store_true", help="print each valid file with every default filled in"
    )
    validate.add_argument(
        "--strict",
        action="store_true",
        help="refuse AgileRL's old spellings of keys (e.g. replay_buffer.memory_size), which "
        "are otherwise read under their new names with a warning",
    )
    validate.set_defaults(handler=run)
