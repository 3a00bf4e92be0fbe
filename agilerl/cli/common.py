"""What several commands share: the error a command reports as plain lines, the torch
device and thread count of a command that runs networks, and option types."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any


class CliError(Exception):
    """A problem reported as plain lines (no traceback), exit status 1."""


def torch_device(name: str) -> Any:
    import torch

    try:
        device = torch.device(name)
    except RuntimeError:
        raise CliError(f"--device {name}: not a torch device (cpu, cuda, cuda:1, mps)") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise CliError(f"--device {name}: CUDA is not available on this machine")
    return device


@contextlib.contextmanager
def command_threads(explicit: int | None, agent: Any, device: Any) -> Iterator[None]:
    """The block runs on the torch thread count that ``agilerl train`` would choose for
    ``agent`` (None: no networks) on ``device``: one thread for small networks on the
    CPU unless the user set one (``--threads``, ``AGILERL_NUM_THREADS``,
    ``OMP_NUM_THREADS``); see :mod:`agilerl.training.threads`. Every command that runs
    torch outside a training run takes its count here; the count before is restored
    after (for callers of :func:`main` in-process)."""
    from agilerl.training.threads import apply_threads, restored_threads

    with restored_threads():
        try:
            apply_threads(explicit, agent, device)
        except ValueError as err:
            raise CliError(str(err)) from None
        yield


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def subcommand(
    commands: Any, group: str, group_help: str, name: str, help: str
) -> argparse.ArgumentParser:
    """The parser of ``agilerl GROUP NAME`` (``dataset collect``, ``llm tiny``): a command
    that only groups its subcommands, one of which is added here."""
    parser = commands.add_parser(group, help=group_help)
    subcommands = parser.add_subparsers(dest=f"{group}_command", required=True)
    return subcommands.add_parser(name, help=help)


def threads_option(parser: argparse.ArgumentParser) -> None:
    """``--threads N`` of every command that runs networks (:func:`command_threads`)."""
    parser.add_argument(
        "--threads",
        type=positive,
        metavar="N",
        help="torch CPU threads (default: 1 for small networks on the CPU; also "
        "AGILERL_NUM_THREADS)",
    )
