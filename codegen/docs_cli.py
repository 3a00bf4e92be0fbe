"""The command-line reference of the documentation, read from ``agilerl.cli``'s parser.

Every command and subcommand gets a section with its usage, help and a table of its
arguments (positional and options, with defaults and choices), so the page says what the
parser accepts and nothing else. ``docs/hooks/gen_reference.py`` writes it at build
time; tests call :func:`cli_page` directly.
"""

from __future__ import annotations

import argparse
import html
from collections.abc import Iterator

from codegen.docs_specs import cell, code


def subcommands(
    parser: argparse.ArgumentParser, prefix: str
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Each (sub)command below ``parser``, depth first: full name, help, its parser."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            full = f"{prefix} {name}"
            yield full, helps.get(name, ""), sub
            yield from subcommands(sub, full)


def _flags(action: argparse.Action) -> str:
    if action.option_strings:
        shown = ", ".join(code(flag) for flag in action.option_strings)
        if action.nargs != 0:
            choices = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
            metavar = action.metavar or choices or action.dest.upper()
            shown += " " + code(metavar if isinstance(metavar, str) else " ".join(metavar))
        return shown
    metavar = action.metavar or action.dest
    return code(metavar if isinstance(metavar, str) else " ".join(metavar))


#: How many values an argument takes, by its ``nargs``.
_NARGS = {"+": "one or more", "*": "any number", "?": "optional (none or one)"}


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0:  # a flag: store_true and the like
        return "off"
    if action.default in (None, argparse.SUPPRESS) or action.default == []:
        return "—"
    return code(str(action.default))


def _sentence(text: str) -> str:
    # Help is written for the terminal: "<out>" is text there, not an HTML tag.
    text = html.escape(" ".join(text.split()), quote=False)
    if not text:
        return ""
    return text[0].upper() + text[1:] + ("" if text.endswith((".", ")")) else ".")


def _help(action: argparse.Action) -> str:
    parts = [_sentence(action.help)] if action.help and action.help != argparse.SUPPRESS else []
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        parts.append("One of " + ", ".join(code(str(c)) for c in action.choices) + ".")
    if isinstance(action.nargs, str) and action.nargs in _NARGS:
        parts.append(f"Values: {_NARGS[action.nargs]}.")
    if isinstance(action, argparse._AppendAction):
        parts.append("Repeatable.")
    return " ".join(parts)


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    rows = [
        a
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]
    if not rows:
        return []
    lines = ["| Argument | Default | Description |", "|---|---|---|"]
    for action in rows:
        lines.append(
            f"| {cell(_flags(action))} | {cell(_default(action))} | {cell(_help(action))} |"
        )
    return lines


def _usage(parser: argparse.ArgumentParser) -> str:
    """``parser.format_usage()`` at a fixed width: argparse otherwise wraps at the width of
    the terminal the build runs in, and the page would change with it."""
    formatter = argparse.HelpFormatter(prog=parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _section(level: str, name: str, help_text: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = ["", f"{level} `{name}` {{#{name.replace(' ', '-')}}}", ""]
    if help_text:
        lines += [_sentence(help_text), ""]
    # ``text``: shown, never run by the docs' snippet test.
    lines += ["```text", _usage(parser), "```"]
    table = _arguments(parser)
    return lines + (["", *table] if table else [])


def cli_page(parser: argparse.ArgumentParser | None = None) -> str:
    """The page: the program's description, then every command in parser order."""
    if parser is None:
        from agilerl.cli import build_parser

        parser = build_parser()
    prog = parser.prog
    lines = [
        "# Command line",
        "",
        f"Generated from the argument parser of `{prog}` (`agilerl/cli/`) when the site is "
        f"built. `{prog} COMMAND --help` prints the same.",
        "",
        " ".join((parser.description or "").split()),
    ]
    lines += _section("##", prog, "", parser)
    for name, help_text, sub in subcommands(parser, prog):
        level = "#" * min(name.count(" ") + 1, 4)
        lines += _section(level, name, help_text, sub)
    return "\n".join(lines) + "\n"
