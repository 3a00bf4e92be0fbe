"""``agilerl llm tiny``: build a tiny random causal LM, its tokenizer, toy datasets and a
reward file (offline, seconds) for the LLM manifests, examples and tests."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agilerl.cli.common import CliError, command_threads, subcommand


def run(args: argparse.Namespace) -> int:
    from agilerl.llm.tiny import AssetsExistError, build_tiny_assets

    try:
        import torch

        with command_threads(None, None, torch.device("cpu")):  # a tiny model: one thread
            root = build_tiny_assets(args.directory, seed=args.seed, force=args.force)
    except CliError as err:  # AGILERL_NUM_THREADS refused
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except AssetsExistError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"agilerl: {args.directory}: {err.strerror or err}", file=sys.stderr)
        return 1
    print(f"wrote {root}/: model/ (tiny Llama + tokenizer), data/*.jsonl, reward.py")
    return 0


def add_parser(commands: Any) -> None:
    """The ``llm`` command and its ``tiny`` subcommand."""
    tiny = subcommand(
        commands,
        "llm",
        "LLM fine-tuning helpers",
        "tiny",
        "build a tiny random causal LM, its tokenizer, toy datasets and a reward file "
        "in DIR (offline, seconds) for the LLM manifests, examples and tests",
    )
    tiny.add_argument("directory", metavar="DIR")
    tiny.add_argument("--seed", type=int, default=0, help="weights and data seed (default 0)")
    tiny.add_argument(
        "--force", action="store_true", help="overwrite the files of an earlier llm tiny there"
    )
    tiny.set_defaults(handler=run)
