"""The ``agilerl`` command line: validate manifests and specs, print the schema, start a
manifest, train it, evaluate a trained agent."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

from agilerl.cli import dataset, evaluate, init, llm, schema, train, validate
from agilerl.guards.time_limit import TimeLimitSettingError, limit_seconds
from agilerl.guards.user_code import UserCodeWarning

#: The commands in the order ``agilerl --help`` lists them: each module adds its parser
#: (``add_parser``) and runs its command (``run``). A module imports at its top only what
#: reading the command line needs; what a command runs (torch, the engine) it imports when
#: it runs, so ``--help`` and a refused manifest answer before the engine loads.
COMMANDS = (validate, schema, init, train, evaluate, dataset, llm)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agilerl", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def _one_line_warnings() -> None:
    """Print a :class:`~agilerl.guards.user_code.UserCodeWarning` (it names the manifest field
    already) as one ``agilerl: warning:`` line, not Python's file, line and source;
    every other warning as Python prints it."""
    python_format = warnings.formatwarning
    if getattr(python_format, "one_line", False):
        return  # installed by an earlier call in this process

    def formatwarning(message: Any, category: Any, *args: Any, **kwargs: Any) -> str:
        if issubclass(category, UserCodeWarning):
            return f"agilerl: warning: {message}\n"
        return python_format(message, category, *args, **kwargs)

    formatwarning.one_line = True  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as given (to relaunch it)
    _one_line_warnings()

    try:
        # The time limit for user code: every command that calls user code runs under it,
        # so a bad setting is refused once, here, before anything runs.
        limit_seconds()
    except TimeLimitSettingError as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    try:
        status = args.handler(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter exit
    except BrokenPipeError:
        return _stdout_closed()
    return status


#: The exit status of a command whose reader went away: a process killed by SIGPIPE
#: (what ``cmd | head`` does to a C program) ends with 128 + 13 in the shell.
EXIT_STDOUT_CLOSED = 141


def _stdout_closed() -> int:
    """End quietly once the reader of stdout is gone (``agilerl evaluate ... | head``).
    Python ignores SIGPIPE, so the write raised BrokenPipeError instead; what is still
    buffered would raise again when the interpreter flushes stdout on exit, so stdout is
    pointed at the null device first (the recipe of Python's signal documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_STDOUT_CLOSED
