"""``agilerl train``: train a manifest's population on this process, or split it over
several (``--processes``, torchrun), and say how to resume an interrupted run."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from agilerl.cli.common import CliError, positive, threads_option, torch_device
from agilerl.cli.overrides import load_with_overrides
from agilerl.cli.validate import run_refusal
from agilerl.distributed.liveness import EXIT_CODE, PeerTimeoutSettingError, peer_timeout
from agilerl.files.atomic import OutputError
from agilerl.guards.manifest_code import code_references
from agilerl.guards.user_code import UserCodeError
from agilerl.models.base import AlgorithmNotAvailableError
from agilerl.resources.distribution import DISTRIBUTION


def _tracking_overrides(args: argparse.Namespace) -> list[str]:
    """``--tensorboard`` / ``--wandb`` as the ``--set`` assignments they stand for (values
    quoted: JSON strings are YAML strings, so a DIR like ``123`` or ``null`` stays text)."""
    fields = {"tensorboard": "training.tensorboard_log_dir", "wandb": "training.wandb.project"}
    return [
        f"{key}={json.dumps(getattr(args, flag))}"
        for flag, key in fields.items()
        if getattr(args, flag) is not None
    ]


#: The options of ``agilerl train`` a resume repeats, as (flag, attribute): every one that
#: shapes the run (its manifest, its budget, where it writes, how it computes) or what it
#: prints. ``--force`` is left out (it would delete the run being resumed), and so is
#: ``--resume CHECKPOINT``: a resumed run writes its checkpoints to its own checkpoint
#: path, so plain ``--resume`` continues it from there.
_RESUME_OPTIONS = (
    ("--set", "set"),
    ("--tensorboard", "tensorboard"),
    ("--wandb", "wandb"),
    ("--device", "device"),
    ("--out", "out"),
    ("--checkpoint-path", "checkpoint_path"),
    ("--checkpoint-steps", "checkpoint_steps"),
    ("--threads", "threads"),
    ("--processes", "processes"),
    ("--quiet", "quiet"),
)


def resume_command(args: argparse.Namespace) -> str:
    """The command that continues the run ``args`` started: the same manifest and every
    option of :data:`_RESUME_OPTIONS` it was given (a resume without the run's ``--set``
    would train another run: a different budget, population or environment), then
    ``--resume``. Values are shell-quoted so that the line can be pasted as it is."""
    from agilerl.cli import build_parser  # the package imports this module for its parser

    defaults = build_parser().parse_args(["train", args.manifest])
    words = ["agilerl", "train", args.manifest]
    for flag, attribute in _RESUME_OPTIONS:
        value = getattr(args, attribute)
        if value == getattr(defaults, attribute):
            continue  # the default: the resumed run takes it too
        if value is True:
            words.append(flag)
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [flag, str(item)]
    return shlex.join([*words, "--resume"])


def run(args: argparse.Namespace) -> int:
    # Only what reads the settings and the manifest: a refused manifest is answered before
    # torch and the engine load (seconds), which _run_training imports.
    from agilerl.distributed.launcher import launched_world_size

    rank = int(os.environ.get("RANK", "0") or 0)
    who = "agilerl" if launched_world_size() == 1 else f"agilerl (rank {rank})"
    try:
        if args.processes > 1 or launched_world_size() > 1:
            peer_timeout()  # a bad setting is refused once, before any rank starts
        manifest = load_with_overrides(args.manifest, args.set + _tracking_overrides(args))
    except (CliError, PeerTimeoutSettingError) as err:
        print(f"{who}: {err}", file=sys.stderr)
        return 1
    refusal = run_refusal(manifest)  # what `agilerl validate` says of it, before anything
    if refusal is not None:
        print(f"{who}: {args.manifest}: {refusal}", file=sys.stderr)
        return 1
    if args.processes > 1 and launched_world_size() == 1:
        return _launch(args)  # the manifest is valid: start the ranks
    return _run_training(args, manifest, rank, who)


def _run_training(args: argparse.Namespace, manifest: Any, rank: int, who: str) -> int:
    """``agilerl train`` of a valid manifest on this process (one rank of a launch)."""
    from agilerl.distributed import PeerLost
    from agilerl.families.environments import EnvironmentSpecError
    from agilerl.files.checkpoints import CheckpointError
    from agilerl.trainer import LocalTrainer, TrainerError
    from agilerl.training.preflight import PreflightError
    from agilerl.training.run_directory import EarlierRunError
    from agilerl.training.tracking import TrackingError

    try:
        out = Path(args.out) if args.out else Path("runs") / Path(args.manifest).stem
        # training may be absent (null: every default)
        checkpoint = args.checkpoint_path or getattr(manifest.training, "checkpoint_path", None)
        checkpoint = checkpoint or str(out / "checkpoint.pt")
        resume = checkpoint if args.resume is True else args.resume
        device = torch_device(args.device)
        trainer = LocalTrainer.from_manifest(
            manifest,
            device=device,
            resume_from_checkpoint=resume,
            num_threads=args.threads,
            base_dir=Path(args.manifest).parent,  # the manifest's relative paths start there
        )
        if rank == 0:  # one rank speaks for the run
            if not args.quiet:  # a quiet run prints one line, at its end
                print(
                    f"training {manifest.algorithm.name} on {trainer.env_name}: population "
                    f"{trainer.training.pop_size}, {trainer.training.max_steps:,} steps per "
                    f"agent, output in {out}/" + (f", resuming from {resume}" if resume else ""),
                    file=sys.stderr,
                )
            # Before the run imports any of it, quiet or not: what code runs is a notice,
            # like a warning, not progress.
            for ref in code_references(manifest, base_dir=Path(args.manifest).parent):
                print(ref.line(), file=sys.stderr)
        trainer.train(
            verbose=not args.quiet and rank == 0,
            output_dir=out,
            checkpoint_path=checkpoint,
            checkpoint_steps=args.checkpoint_steps,
            force=args.force,
        )
        if args.quiet and rank == 0:  # the one line a quiet run prints: its outputs
            resumed = f", resumed from {resume}" if resume else ""
            print(f"outputs in {out}/ (best agent: {trainer.best_summary()}){resumed}")
    except EarlierRunError as err:
        print(
            f"agilerl: {err.where()}: holds an earlier run's outputs ({err.names()}). "
            "Continue that run with --resume, write this one elsewhere with --out DIR, or "
            "replace it with --force (deletes the earlier run's outputs and checkpoint "
            "first)",
            file=sys.stderr,
        )
        return 1
    except (
        CliError,
        CheckpointError,
        EnvironmentSpecError,
        AlgorithmNotAvailableError,
        OutputError,
        PreflightError,
        TrackingError,
        TrainerError,
        UserCodeError,
    ) as err:
        print(f"{who}: {err}", file=sys.stderr)
        return 1
    except PeerLost as err:
        print(f"{who}: {err}", file=sys.stderr)
        return EXIT_CODE
    except KeyboardInterrupt:
        print(f"\nagilerl: interrupted; continue with: {resume_command(args)}", file=sys.stderr)
        return 130
    return 0


def _launch(args: argparse.Namespace) -> int:
    """``agilerl train --processes N``: the same command on N processes of this machine,
    started by torchrun's launcher (``torch.distributed.run --standalone``), run in this
    process so that its end is ours to report: torchrun ends the others when one fails,
    and a rank killed or interrupted is one line (exit status 75, or 130 for Ctrl-C)
    instead of the launcher's ``ChildFailedError`` traceback."""
    import logging

    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    argv = list(args.argv)
    # The ranks run the command without --processes (torchrun started them already).
    for i, item in enumerate(argv):
        if item == "--processes":
            del argv[i : i + 2]
            break
        if item.startswith("--processes="):
            del argv[i]
            break
    launcher = [
        "--standalone",
        f"--nproc-per-node={args.processes}",
        "-m",
        "agilerl",
        *argv,
    ]
    print(f"agilerl: starting {args.processes} processes (torchrun)", file=sys.stderr)
    # The launcher's own log (closing signals, the failure summary) repeats what the
    # line below says.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    resume = resume_command(args)
    try:
        run(parse_args(launcher))
    except ChildFailedError as err:
        return _rank_failure(err, resume)
    except (SignalException, KeyboardInterrupt):
        print(f"\nagilerl: interrupted; continue with: {resume}", file=sys.stderr)
        return 130
    return 0


def _rank_failure(err: Any, resume: str) -> int:
    """The exit status of a multi-process run one of whose ranks failed, and its line.
    Ranks that stopped with an error of their own (exit status 1) have printed it; a rank
    killed by a signal, or one that stopped because a peer was gone (75), is named."""
    codes = {rank: failure.exitcode for rank, failure in err.failures.items()}
    if all(code == 1 for code in codes.values()):
        return 1
    # The rank lost: one killed by a signal other than the SIGTERM the launcher sends the
    # rest when one fails; else any killed one; else the first to fail.
    killed = [r for r, code in sorted(codes.items()) if code < 0]
    others = [r for r in killed if codes[r] != -signal.SIGTERM]
    lost = (others or killed or [err.get_first_failure()[0]])[0]
    code = codes[lost]
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit status {code}"
    print(
        f"agilerl: rank {lost} ended ({how}) and the run stopped on every rank; "
        f"resume the run with: {resume}",
        file=sys.stderr,
    )
    return EXIT_CODE


def add_parser(commands: Any) -> None:
    """The ``train`` command."""
    train = commands.add_parser(
        "train",
        help="train a population from a manifest (progress, summaries, best agent, plot)",
    )
    train.add_argument("manifest", metavar="MANIFEST")
    train.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a manifest value (dotted key, YAML value), validated like the file; "
        "repeatable, e.g. --set training.max_steps=20000",
    )
    train.add_argument("--device", default="cpu", help="torch device (default cpu)")
    train.add_argument(
        "--out",
        help="output directory (default runs/<manifest name>): checkpoint, best "
        "agent, final manifest, fitness plot, history",
    )
    train.add_argument(
        "--checkpoint-path", help="run checkpoint file (default <out>/checkpoint.pt)"
    )
    train.add_argument(
        "--checkpoint-steps",
        type=int,
        help="steps per agent between checkpoints (default: every generation)",
    )
    train.add_argument(
        "--resume",
        nargs="?",
        const=True,
        metavar="CHECKPOINT",
        help="continue from a run checkpoint (default: the run's checkpoint path)",
    )
    train.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier run in the output directory: delete its outputs and "
        "checkpoint first (other files stay); without it such a run is refused",
    )
    threads_option(train)
    train.add_argument(
        "--processes",
        type=positive,
        default=1,
        metavar="N",
        help="split the population over N processes on this machine (torchrun; the same "
        "as `torchrun --standalone --nproc-per-node N -m agilerl train ...` or "
        "`accelerate launch --num_processes N -m agilerl train ...`)",
    )
    train.add_argument(
        "--tensorboard",
        metavar="DIR",
        help="write TensorBoard event files to DIR every generation (training."
        f"tensorboard_log_dir; needs {DISTRIBUTION}[tensorboard])",
    )
    train.add_argument(
        "--wandb",
        metavar="PROJECT",
        help="log every generation to this Weights & Biases project (training.wandb."
        f"project; needs {DISTRIBUTION}[wandb]; WANDB_MODE=offline keeps it on this machine)",
    )
    train.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar or summaries; one final line says where the outputs are",
    )
    train.set_defaults(handler=run)
