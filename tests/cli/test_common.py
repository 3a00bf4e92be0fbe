"""What the commands share (agilerl/cli/common.py): a torch device named on the command
line, positive counts, and a group command's subcommand parser."""

from __future__ import annotations

import argparse

import pytest
import torch

from agilerl.cli.common import CliError, command_threads, positive, subcommand, torch_device


def test_a_torch_device_is_taken_by_its_name():
    assert torch_device("cpu") == torch.device("cpu")


def test_a_name_torch_does_not_know_is_refused_with_examples():
    with pytest.raises(CliError) as err:
        torch_device("gpu0")
    assert str(err.value) == "--device gpu0: not a torch device (cpu, cuda, cuda:1, mps)"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_on_a_machine_without_it_is_refused():
    with pytest.raises(CliError) as err:
        torch_device("cuda:1")
    assert str(err.value) == "--device cuda:1: CUDA is not available on this machine"


@pytest.mark.parametrize("text", ["0", "-1", "1.5", "two", ""])
def test_positive_refuses_what_is_not_a_positive_integer(text):
    with pytest.raises(argparse.ArgumentTypeError) as err:
        positive(text)
    assert str(err.value) == f"{text!r} is not a positive integer"


def test_positive_accepts_counts():
    assert positive("1") == 1 and positive("16") == 16


def test_a_group_command_requires_one_of_its_subcommands():
    parser = argparse.ArgumentParser(prog="agilerl")
    commands = parser.add_subparsers(dest="command")
    collect = subcommand(commands, "dataset", "datasets", "collect", "collect one")
    collect.add_argument("--steps", type=positive)
    args = parser.parse_args(["dataset", "collect", "--steps", "3"])
    assert (args.command, args.dataset_command, args.steps) == ("dataset", "collect", 3)
    with pytest.raises(SystemExit):
        parser.parse_args(["dataset"])


def test_the_thread_count_is_restored_after_a_command():
    before = torch.get_num_threads()
    with command_threads(None, None, torch.device("cpu")):
        pass
    assert torch.get_num_threads() == before
