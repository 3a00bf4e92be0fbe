"""``agilerl init``: write a starter manifest (:mod:`agilerl.cli.starter`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agilerl.cli.starter import default_file_name, env_refusal, starter_manifest
from agilerl.files.atomic import OutputError, write_text
from agilerl.files.documents import dump_yaml, modeline
from agilerl.models.base import AgentType, engine_lacks
from agilerl.models.registry import ALGO_REGISTRY
from agilerl.resources.distribution import install_command


def run(args: argparse.Namespace) -> int:
    if args.algorithm not in ALGO_REGISTRY:
        print(f"agilerl: {ALGO_REGISTRY.not_registered(args.algorithm)}", file=sys.stderr)
        return 2
    refusal = None if args.env is None else env_refusal(args.env)
    if refusal:
        print(f"agilerl: {refusal}", file=sys.stderr)
        return 2
    spec_cls = ALGO_REGISTRY.get(args.algorithm).spec_cls
    image = None
    if args.env and spec_cls.agent_type is AgentType.SingleAgent:
        from agilerl.families.single_agent.envs import image_observations

        image = image_observations(args.env)  # a CNN for image observations
    manifest = starter_manifest(spec_cls, args.env, image)
    output = Path(args.output or default_file_name(manifest))
    try:
        exists = output.exists()
    except OSError as err:  # a name the file system refuses (too long), before writing
        print(f"agilerl: {output}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 1
    if exists and not args.force:
        print(f"agilerl: {output} exists (use --force to overwrite)", file=sys.stderr)
        return 1
    body = dump_yaml(manifest)

    try:
        write_text(output, modeline(output) + body)
    except OutputError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    print(f"wrote {output}: a {args.algorithm} manifest; check it with `agilerl validate {output}`")
    lacking = engine_lacks(args.algorithm)
    if lacking:
        print(f"agilerl: warning: {lacking}", file=sys.stderr)
    if args.env and ALGO_REGISTRY.get(args.algorithm).spec_cls.agent_type is AgentType.SingleAgent:
        from agilerl.families.single_agent.envs import missing_extra

        extra = missing_extra(args.env, installed_too=False)
        if extra:
            print(
                f"agilerl: warning: {args.env} needs the {extra} extra to train: "
                f"{install_command(extra)}",
                file=sys.stderr,
            )
    return 0


def add_parser(commands: Any) -> None:
    """The ``init`` command."""
    init = commands.add_parser(
        "init", help="write a starter manifest that editors complete at once"
    )
    init.add_argument("algorithm", metavar="ALGO", help="registered algorithm name, e.g. DQN")
    init.add_argument("--env", help="environment name (default: one that suits the algorithm)")
    init.add_argument(
        "-o",
        "--output",
        help="file to write (default: <algo>-<env>.yaml, e.g. ppo-cartpole-v1.yaml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(handler=run)
