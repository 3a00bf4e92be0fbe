"""``agilerl train --resume``: a hostile, malformed or mismatched checkpoint is refused
with one clear line (exit 1, no traceback), and no code in it runs."""

import builtins
import io
from pathlib import Path

import pytest
import torch
from support import ROOT

from agilerl.cli import main
from agilerl.files import checkpoints

CONFIG = str(ROOT / "configs/dqn.yaml")
TINY = [
    "--set", "training.max_steps=100",
    "--set", "training.evo_steps=50",
    "--set", "training.pop_size=2",
    "--set", "training.eval_steps=20",
    "--set", "environment.num_envs=2",
    "--set", "replay_buffer.max_size=500",
]  # fmt: skip


class RunsCode:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (builtins.open, (self.marker, "w"))


def write_old_format_pickle(path: Path, marker: Path) -> None:
    """A file in the previous format (header + torch pickle) whose pickle runs code."""
    buffer = io.BytesIO()
    torch.save({"kind": "run", "x": RunsCode(marker)}, buffer)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(checkpoints.frame(buffer.getvalue(), version=1))


def refused(args, capsys) -> str:
    assert main(["train", CONFIG, *TINY, *args]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "run"
    assert main(["train", CONFIG, *TINY, "--out", str(out)]) == 0
    return out


def test_plain_resume_refuses_a_pickle_at_the_default_checkpoint_path(tmp_path, capsys):
    out, marker = tmp_path / "run", tmp_path / "marker"
    write_old_format_pickle(out / "checkpoint.pt", marker)
    err = refused(["--out", str(out), "--resume"], capsys)
    assert f"{out / 'checkpoint.pt'}: checkpoint format version 1" in err
    assert not marker.exists()


def test_resume_from_a_named_pickle_file_is_refused(tmp_path, capsys):
    path, marker = tmp_path / "evil.pt", tmp_path / "marker"
    write_old_format_pickle(path, marker)
    err = refused(["--out", str(tmp_path / "run"), "--resume", str(path)], capsys)
    assert "can run code" in err and not marker.exists()


def test_resume_from_a_malformed_checkpoint_names_the_key(finished_run, tmp_path, capsys):
    tree = checkpoints.load(finished_run / "checkpoint.pt")
    del tree["agents"][0]["networks"]["actor"]
    bad = checkpoints.save(tree, tmp_path / "bad.pt")
    err = refused(["--out", str(tmp_path / "run"), "--resume", str(bad)], capsys)
    assert f"{bad}: agents[0].networks.actor: missing" in err


def test_resume_with_a_changed_manifest_lists_every_difference(finished_run, tmp_path, capsys):
    changes = ["--set", "algorithm.lr=0.002", "--set", "replay_buffer.max_size=600"]
    err = refused(["--out", str(finished_run), "--resume", *changes], capsys)
    assert "cannot resume" in err
    assert "algorithm.lr: checkpoint 0.001, this run 0.002" in err
    assert "replay_buffer.max_size: checkpoint 500, this run 600" in err


def test_resume_with_a_raised_budget_continues(tmp_path, capsys):
    out = tmp_path / "more"
    assert main(["train", CONFIG, *TINY, "--out", str(out)]) == 0
    capsys.readouterr()
    more = ["--set", "training.max_steps=150"]
    assert main(["train", CONFIG, *TINY, *more, "--out", str(out), "--resume"]) == 0
    assert checkpoints.load(out / "checkpoint.pt", kind="run")["state"]["steps"] == 150
