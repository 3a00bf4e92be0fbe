"""``agilerl schema``: print (or write) a schema as one self-contained file."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agilerl.cli.validate import MANIFEST
from agilerl.files.atomic import OutputError, write_text


def run(args: argparse.Namespace) -> int:
    from agilerl.files.schema import bundle_schema

    text = json.dumps(bundle_schema(args.spec), indent=2) + "\n"
    if args.output:
        try:
            write_text(args.output, text)
        except OutputError as err:
            print(f"agilerl: {err}", file=sys.stderr)
            return 1
        print(f"wrote {args.output} ({args.spec}, every referenced schema bundled)")
    else:
        sys.stdout.write(text)
    return 0


def add_parser(commands: Any) -> None:
    """The ``schema`` command."""
    schema = commands.add_parser(
        "schema", help="print (or write) a schema as one self-contained file"
    )
    schema.add_argument("--spec", default=MANIFEST, help=f"schema title (default {MANIFEST})")
    schema.add_argument("-o", "--output", help="write to this file instead of stdout")
    schema.set_defaults(handler=run)
