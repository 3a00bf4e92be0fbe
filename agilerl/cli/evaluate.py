"""``agilerl evaluate``: run a saved agent of any family for some episodes, on the
environment it records (behind the recorded-code gate), ``--env`` or ``--manifest``."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agilerl.cli.common import CliError, command_threads, threads_option, torch_device
from agilerl.cli.overrides import load_with_overrides
from agilerl.files.atomic import OutputError
from agilerl.guards.manifest_code import code_references
from agilerl.guards.user_code import UserCodeError
from agilerl.models.env import OFFLINE_DATASET_FIELDS

if TYPE_CHECKING:
    from agilerl.families.base import Family


def _without_dataset(document: dict[str, Any]) -> dict[str, Any]:
    """An offline environment section as the Gymnasium environment it evaluates in (an
    offline agent records its dataset beside it)."""
    return {key: value for key, value in document.items() if key not in OFFLINE_DATASET_FIELDS}


def _evaluation_environment(
    args: argparse.Namespace, agent: Any, family: Family
) -> tuple[str, Any]:
    """Where the environment to evaluate on comes from, and its section: --env, the
    manifest's (its relative paths from the manifest's folder, as in training), or the
    one the agent file records (agents written by ``agilerl train`` record theirs); an
    offline section without its dataset."""
    if args.manifest:
        environment = load_with_overrides(args.manifest, []).environment
        document = family.recorded_environment(environment, Path(args.manifest).parent)
        return f"{args.manifest}: environment", _without_dataset(document)
    if args.env:
        return "--env", {"name": args.env}
    if agent.environment is None:
        raise CliError(
            f"{args.agent} records no environment (only agents that agilerl train wrote do); "
            "name one with --env ID or --manifest FILE"
        )
    return f"{args.agent}: environment", _without_dataset(agent.environment)


def run(args: argparse.Namespace) -> int:
    from agilerl.algorithms.core.evolvable import EvolvableAlgorithm
    from agilerl.evaluation import EvaluationError, agent_family
    from agilerl.families.environments import EnvironmentSpecError
    from agilerl.files.checkpoints import CheckpointError
    from agilerl.guards.recorded_code import (
        RecordedCodeError,
        check_recorded_code,
        installed_imports,
    )

    try:
        # Any family's agent: its family evaluates it, or says why it cannot.
        device = torch_device(args.device)
        agent = EvolvableAlgorithm.load(args.agent, device=device)
        family = agent_family(agent)
        where, document = _evaluation_environment(args, agent, family)
        try:
            environment = family.evaluation_environment(document, agent)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(map(str, first["loc"]))
            raise CliError(f"{where}: {loc}: {first['msg']}") from None
        imports: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if not (args.env or args.manifest or args.trust_agent_code):  # what the file records
            # The files that could pose as a trusted module: those beside the agent and in
            # the working directory (the agent unpacked and evaluated in place).
            beside = (Path.cwd(), Path(args.agent).resolve().parent)
            check_recorded_code(args.agent, environment, trusted=False, beside=beside)
            imports = installed_imports(beside)
        label = getattr(environment, "entrypoint", None) or environment.name
        print(f"evaluating {args.agent} ({agent.name}) on {label}", file=sys.stderr)
        for ref in code_references(SimpleNamespace(environment=environment)):
            print(ref.line(), file=sys.stderr)  # before any of it is imported
        if args.video:
            # rgb_array frames need no display; without one SDL (pygame) complains.
            os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        with imports, command_threads(args.threads, agent, device):
            result = family.evaluate_saved(
                agent,
                environment,
                episodes=args.episodes,
                seed=args.seed,
                deterministic=not args.stochastic,
                video=args.video,
                max_episode_steps=args.max_episode_steps,
            )
    except (
        CliError,
        CheckpointError,
        EnvironmentSpecError,
        EvaluationError,
        OutputError,
        UserCodeError,
        RecordedCodeError,
    ) as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    if args.format == "json":
        from agilerl.training.finite import json_safe

        report = json_safe({"agent": args.agent, **result.to_json()})  # strict JSON
        print(json.dumps(report, indent=2, allow_nan=False))
    else:
        print(result.summary())
    return 0


def add_parser(commands: Any) -> None:
    """The ``evaluate`` command."""
    evaluate = commands.add_parser(
        "evaluate",
        help="run a saved agent for some episodes: mean and spread of the return, a video",
    )
    evaluate.add_argument("agent", metavar="AGENT", help="agent file, e.g. runs/ppo/best_agent.pt")
    where = evaluate.add_mutually_exclusive_group()
    where.add_argument(
        "--env",
        metavar="ID",
        help="Gymnasium environment id (default: the one the agent file records)",
    )
    where.add_argument(
        "--manifest",
        metavar="FILE",
        help="take the environment (entry point, config, wrappers) from a manifest",
    )
    evaluate.add_argument(
        "--trust-agent-code",
        action="store_true",
        help="build the environment the agent file records even where it names code "
        "(an entry point, wrappers, a path or module) outside the installed environment "
        "packages: only for files from someone you trust",
    )
    evaluate.add_argument(
        "--episodes", type=int, default=10, metavar="N", help="episodes (default 10)"
    )
    evaluate.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="S",
        help="episode i resets with seed S+i (default 0)",
    )
    evaluate.add_argument(
        "--stochastic",
        action="store_true",
        help="sample actions from the policy (default: deterministic, the most likely)",
    )
    evaluate.add_argument(
        "--video",
        metavar="FILE",
        help="record the first episode: .gif, or .mp4 (needs the video extra)",
    )
    evaluate.add_argument(
        "--max-episode-steps",
        type=int,
        metavar="N",
        help="cut longer episodes (for environments without a time limit)",
    )
    evaluate.add_argument("--device", default="cpu", help="torch device (default cpu)")
    evaluate.add_argument("--format", choices=["text", "json"], default="text")
    threads_option(evaluate)
    evaluate.set_defaults(handler=run)
