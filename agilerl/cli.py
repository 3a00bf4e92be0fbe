"""The ``agilerl`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from pydantic import BaseModel


def spec_classes() -> dict[str, type[BaseModel]]:
    """Every public spec class of :mod:`agilerl.models`, by class name."""
    import agilerl.models as models

    return {
        name: obj
        for name in models.__all__
        if isinstance(obj := getattr(models, name), type) and issubclass(obj, BaseModel)
    }


def _dump_yaml(data: Any) -> str:
    from io import StringIO

    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False
    out = StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _validate(args: argparse.Namespace) -> int:
    from agilerl.documents import DocumentError, load_spec
    from agilerl.models.validation import SpecError

    classes = spec_classes()
    spec_cls = classes.get(args.spec)
    if spec_cls is None:
        print(
            f"agilerl: unknown spec {args.spec!r}; known: {', '.join(sorted(classes))}",
            file=sys.stderr,
        )
        return 2
    failed = False
    report: dict[str, Any] = {}
    for path in args.files:
        try:
            spec = load_spec(spec_cls, path)
        except DocumentError as err:
            failed = True
            report[path] = {"valid": False, "errors": [{"message": str(err)}]}
            if args.format == "text":
                print(err, file=sys.stderr)
        except SpecError as err:
            failed = True
            report[path] = {
                "valid": False,
                "errors": [
                    {
                        "path": issue.dotted_path,
                        "line": issue.position[0] if issue.position else None,
                        "column": issue.position[1] if issue.position else None,
                        "message": issue.message,
                    }
                    for issue in err.issues
                ],
            }
            if args.format == "text":
                print(err, file=sys.stderr)
        else:
            dumped = spec.model_dump(mode="json")
            report[path] = {"valid": True, "spec": dumped}
            if args.format == "text":
                print(f"# {path}: valid {args.spec} (defaults filled in)")
                print(_dump_yaml(dumped), end="")
    if args.format == "json":
        print(json.dumps(report, indent=2))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agilerl", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser(
        "validate", help="validate spec files (YAML or JSON) and print them with defaults filled in"
    )
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.add_argument("--spec", required=True, help="spec class name, e.g. QNetworkSpec")
    validate.add_argument("--format", choices=["text", "json"], default="text")
    validate.set_defaults(handler=_validate)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
