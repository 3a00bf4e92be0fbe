"""The ``agilerl`` command line: validate manifests and specs, print the schema, start a manifest."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel

MANIFEST = "TrainingManifest"


def spec_classes() -> dict[str, type[BaseModel]]:
    """Every public spec class of :mod:`agilerl.models`, by class name."""
    import agilerl.models as models

    return {
        name: obj
        for name in models.__all__
        if isinstance(obj := getattr(models, name), type) and issubclass(obj, BaseModel)
    }


def dump_yaml(data: Any) -> str:
    from io import StringIO

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    out = StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _summary(spec: Any) -> str:
    from agilerl.models.manifest import TrainingManifest

    if not isinstance(spec, TrainingManifest):
        return type(spec).__name__
    env = spec.environment
    return f"{spec.algorithm.name} on {getattr(env, 'name', None) or getattr(env, 'dataset', '?')}"


def _validate(args: argparse.Namespace) -> int:
    from agilerl.documents import DocumentError, load_spec
    from agilerl.models.manifest import load_manifest
    from agilerl.models.validation import SpecError

    classes = spec_classes()
    if args.spec != MANIFEST and args.spec not in classes:
        known = ", ".join(sorted([MANIFEST, *classes]))
        print(f"agilerl: unknown spec {args.spec!r}; known: {known}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {}
    for path in args.files:
        try:
            spec = (
                load_manifest(path)
                if args.spec == MANIFEST
                else load_spec(classes[args.spec], path)
            )
        except DocumentError as err:
            report[path] = {"valid": False, "errors": [{"message": str(err)}]}
            if args.format == "text":
                print(err, file=sys.stderr)
        except SpecError as err:
            report[path] = {"valid": False, "errors": [_issue_json(issue) for issue in err.issues]}
            if args.format == "text":
                print(err, file=sys.stderr)
        else:
            report[path] = {"valid": True}
            if args.format == "text":
                print(f"{path}: valid ({_summary(spec)})")
                if args.show:
                    print(dump_yaml(_dump(spec)), end="")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    return 0 if all(entry["valid"] for entry in report.values()) else 1


def _dump(spec: Any) -> dict[str, Any]:
    from agilerl.models.manifest import TrainingManifest, dump_manifest

    return (
        dump_manifest(spec) if isinstance(spec, TrainingManifest) else spec.model_dump(mode="json")
    )


def _issue_json(issue: Any) -> dict[str, Any]:
    line, column = issue.position or (None, None)
    return {"path": issue.dotted_path, "line": line, "column": column, "message": issue.message}


def _schema(args: argparse.Namespace) -> int:
    from agilerl.schema import bundle_schema

    text = json.dumps(bundle_schema(args.spec), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} ({args.spec}, every referenced schema bundled)")
    else:
        sys.stdout.write(text)
    return 0


def _init(args: argparse.Namespace) -> int:
    from agilerl.models.registry import ALGO_REGISTRY
    from agilerl.starter import starter_manifest

    if args.algorithm not in ALGO_REGISTRY:
        print(
            f"agilerl: unknown algorithm {args.algorithm!r}; known: {', '.join(ALGO_REGISTRY.names())}",
            file=sys.stderr,
        )
        return 2
    output = Path(args.output or f"{args.algorithm.lower()}.yaml")
    if output.exists() and not args.force:
        print(f"agilerl: {output} exists (use --force to overwrite)", file=sys.stderr)
        return 1
    schema = Path(__file__).with_name("schemas") / "manifest.schema.json"
    modeline = f"# yaml-language-server: $schema={os.path.relpath(schema.resolve(), output.resolve().parent)}\n"
    body = dump_yaml(starter_manifest(ALGO_REGISTRY.get(args.algorithm).spec_cls, args.env))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(modeline + body, encoding="utf-8")
    print(f"wrote {output}: a {args.algorithm} manifest; check it with `agilerl validate {output}`")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agilerl", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

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
    validate.set_defaults(handler=_validate)

    schema = commands.add_parser(
        "schema", help="print (or write) a schema as one self-contained file"
    )
    schema.add_argument("--spec", default=MANIFEST, help=f"schema title (default {MANIFEST})")
    schema.add_argument("-o", "--output", help="write to this file instead of stdout")
    schema.set_defaults(handler=_schema)

    init = commands.add_parser(
        "init", help="write a starter manifest that editors complete at once"
    )
    init.add_argument("algorithm", metavar="ALGO", help="registered algorithm name, e.g. DQN")
    init.add_argument("--env", help="environment name (default: one that suits the algorithm)")
    init.add_argument("-o", "--output", help="file to write (default: <algo>.yaml)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(handler=_init)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
