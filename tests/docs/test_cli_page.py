"""The command-line reference (codegen/docs_cli.py): every command, subcommand, option,
default and choice of agilerl's parser is on the page."""

from __future__ import annotations

import argparse

from agilerl.cli import build_parser
from codegen.docs_cli import cli_page, subcommands

PARSER = build_parser()
PAGE = cli_page(PARSER)


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(name, sub) for name, _, sub in subcommands(PARSER, PARSER.prog)]


def test_every_command_and_subcommand_has_a_section():
    names = [name for name, _ in _commands()]
    assert {"agilerl train", "agilerl dataset collect", "agilerl llm tiny"} <= set(names)
    for name in names:
        assert f"`{name}` {{#{name.replace(' ', '-')}}}" in PAGE, name


def _section(name: str) -> str:
    start = PAGE.index(f"`{name}` {{#")
    following = [PAGE.find(f"`{other}` {{#", start + 1) for other, _ in _commands()]
    return PAGE[start : min([i for i in following if i > start], default=len(PAGE))]


def test_every_option_appears_with_its_default_and_choices():
    for name, parser in _commands():
        section = _section(name)
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            for flag in action.option_strings or [action.metavar or action.dest]:
                assert f"`{flag}`" in section, (name, flag)
            if action.default not in (None, False, [], argparse.SUPPRESS):
                assert f"`{action.default}`" in section, (name, action.dest)
            for choice in action.choices or ():
                assert f"`{choice}`" in section, (name, choice)


def test_arguments_read_as_the_parser_defines_them():
    parser = argparse.ArgumentParser(prog="tool", description="A tool.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run <things>")
    run.add_argument("files", nargs="+", metavar="FILE")
    run.add_argument("-o", "--output", required=True, metavar="FILE", help="where to write")
    run.add_argument("--set", action="append", default=[], metavar="K=V", help="an override")
    run.add_argument("--mode", choices=["fast", "slow"], default="fast")
    run.add_argument("--dry", action="store_true", help="do nothing")
    page = cli_page(parser)
    assert "Run &lt;things&gt;." in page  # help is text, not HTML
    assert "usage: tool run [-h] -o FILE [--set K=V] [--mode {fast,slow}] [--dry]" in page
    assert "| `FILE` | required | Values: one or more. |" in page
    assert "| `-o`, `--output` `FILE` | required | Where to write. |" in page
    assert "| `--set` `K=V` | — | An override. Repeatable. |" in page
    assert "| `--mode` `{fast,slow}` | `fast` | One of `fast`, `slow`. |" in page
    assert "| `--dry` | off | Do nothing. |" in page
