"""Outputs are never lost, and the code a manifest names is shown before it runs.

A full disk is simulated by making ``os.fsync`` fail with ENOSPC for the temporaries of
chosen files (the file an fsync is for is read from /proc/self/fd), as a real full disk
fails the write of a file's last blocks.
"""

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from support import ROOT

from agilerl.cli import main
from agilerl.families.environments import EnvironmentSpecError
from agilerl.families.single_agent.envs import UserEnv, make_env
from agilerl.files.atomic import (
    DirectoryLock,
    OutputError,
    OutputInUseError,
    clean_stale_temporaries,
    write_text,
)
from agilerl.guards.manifest_code import code_references
from agilerl.models.env import GymEnvSpec
from agilerl.models.manifest import load_manifest, parse_manifest
from agilerl.trainer import LocalTrainer
from agilerl.training.run_checkpoint import load_run

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="uses /proc and flock")

OUTPUTS = ("best_agent.pt", "population.pt", "manifest.yaml", "fitness.png", "history.json")
TINY = {
    "algorithm": {"name": "DQN", "batch_size": 32, "learn_step": 4},
    "environment": {"name": "CartPole-v1", "num_envs": 2, "sync": True},
    "network": {
        "arch": "mlp",
        "latent_dim": 8,
        "encoder_config": {"hidden_size": [8]},
        "head_config": {"hidden_size": [8]},
    },
    "training": {"max_steps": 400, "evo_steps": 200, "pop_size": 1, "eval_steps": 30, "seed": 1},
    "replay_buffer": {"max_size": 1000},
}
SMALL = [
    "--set", "training.max_steps=400",
    "--set", "training.evo_steps=200",
    "--set", "training.pop_size=1",
    "--set", "training.eval_steps=30",
    "--set", "environment.num_envs=2",
    "--set", "environment.sync=true",
    "--set", "replay_buffer.max_size=1000",
]  # fmt: skip


def temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def disk_full_for(monkeypatch, *targets: str, after: int = 0) -> list[str]:
    """Make the fsync of a temporary for one of ``targets`` (file names) fail with ENOSPC,
    from its ``after``-th write on; returns the log of refused writes."""
    real_fsync = os.fsync
    seen: dict[str, int] = {}
    refused: list[str] = []

    def fsync(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        target = next((t for t in targets if name.startswith(f".{t}.")), None)
        if target is not None:
            seen[target] = seen.get(target, 0) + 1
            if seen[target] > after:
                refused.append(target)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return refused


def train_cli(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "run"
    return main(["train", str(ROOT / "configs/dqn.yaml"), *SMALL, "--out", str(out), *extra]), out


# --- atomic writes ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    trainer = LocalTrainer.from_manifest(json.loads(json.dumps(TINY)))
    trainer.train(verbose=False, output_dir=tmp_path_factory.mktemp("first"))
    return trainer


@pytest.mark.parametrize("failing", OUTPUTS)
def test_a_full_disk_keeps_the_previous_output_and_names_it(
    trained, failing, tmp_path, monkeypatch
):
    previous = {name: f"previous {name}".encode() for name in OUTPUTS}
    for name, data in previous.items():
        (tmp_path / name).write_bytes(data)
    disk_full_for(monkeypatch, failing)
    with pytest.raises(OutputError) as caught:
        trained.save_outputs(tmp_path, verbose=False)
    message = str(caught.value)
    assert f"{tmp_path / failing}: cannot write (No space left on device)" in message
    assert "the previous file is unchanged" in message
    assert (tmp_path / failing).read_bytes() == previous[failing]
    others = [name for name in OUTPUTS if name != failing]
    assert f"written: {', '.join(others)}" in message
    for name in others:  # the other outputs were written, whole
        assert (tmp_path / name).read_bytes() != previous[name]
    if failing != "history.json":
        assert len(json.loads((tmp_path / "history.json").read_text())) == 2
    assert temporaries(tmp_path) == []


def test_outputs_keep_the_mode_a_plain_write_gives(tmp_path):
    plain = tmp_path / "plain"
    plain.write_text("x")
    atomic = write_text(tmp_path / "atomic", "x")
    assert atomic.stat().st_mode == plain.stat().st_mode  # not mkstemp's 0600
    os.chmod(atomic, 0o640)
    write_text(atomic, "y")
    assert atomic.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


def test_a_write_under_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="a parent is a file, not a directory"):
        write_text(tmp_path / "file" / "history.json", "[]")


def test_cli_full_disk_at_the_end_is_one_clear_line(tmp_path, monkeypatch, capsys):
    disk_full_for(monkeypatch, "history.json")
    rc, out = train_cli(tmp_path)
    err = capsys.readouterr().err
    assert rc == 1
    assert f"agilerl: {out / 'history.json'}: cannot write (No space left on device)" in err
    assert "Traceback" not in err
    assert not (out / "history.json").exists()
    assert load_manifest(out / "manifest.yaml").training.max_steps == 400  # the rest is there
    assert load_run(out / "checkpoint.pt")["state"]["generation"] == 2
    assert temporaries(out) == []


@pytest.mark.parametrize("full", ["checkpoint", "everything"])
def test_a_checkpoint_failing_mid_run_stops_it_clearly(full, tmp_path, monkeypatch, capsys):
    disk_full_for(monkeypatch, "checkpoint.pt", after=1)  # the first checkpoint is written
    if full == "everything":
        disk_full_for(monkeypatch, *OUTPUTS)
    rc, out = train_cli(tmp_path, "--set", "training.max_steps=600")
    err = capsys.readouterr().err
    assert rc == 1
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("agilerl:")]
    assert f"{out / 'checkpoint.pt'}: cannot write (No space left on device)" in line
    assert "The run stopped after 2 generations (400 steps per agent)" in line
    assert load_run(out / "checkpoint.pt")["state"]["generation"] == 1  # the previous one
    if full == "checkpoint":
        assert f"its outputs so far are in {out} ({', '.join(OUTPUTS)})" in line
        assert len(json.loads((out / "history.json").read_text())) == 2
        assert (out / "best_agent.pt").exists()
    else:
        assert "its outputs could not all be written" in line
        assert not any((out / name).exists() for name in OUTPUTS)
    assert temporaries(out) == []


# --- stale temporaries and the run lock --------------------------------------------------


def test_stale_temporaries_of_a_killed_writer_go_on_the_next_start(tmp_path):
    out, elsewhere = tmp_path / "run", tmp_path / "checkpoints"
    out.mkdir()
    elsewhere.mkdir()
    stale = [
        out / ".checkpoint.pt.k1ll3d.tmp",
        out / ".history.json.a8x_2f.tmp",
        elsewhere / ".ck.pt.zz9ab.tmp",
        elsewhere / ".ck_400.pt.q1w2e3.tmp",  # a numbered copy's
    ]
    kept = [elsewhere / ".other.pt.zz9ab.tmp", out / "notes.tmp", elsewhere / "ck.pt.tmp"]
    for path in stale + kept:
        path.write_bytes(b"half a checkpoint")
    trainer = LocalTrainer.from_manifest(json.loads(json.dumps(TINY)))
    # force: the directory holds a file of the user's (a new run is otherwise refused)
    trainer.train(verbose=False, output_dir=out, checkpoint_path=elsewhere / "ck.pt", force=True)
    assert not any(path.exists() for path in stale)
    assert all(path.exists() for path in kept)  # not ours: another run's, or the user's
    assert temporaries(out) == ["notes.tmp"]


KILLED_WRITER = """
import os, sys, time
from agilerl.files import atomic

def stuck(fd):  # the write is under way: its temporary exists
    print("writing", flush=True)
    time.sleep(120)

os.fsync = stuck
atomic.write_bytes(sys.argv[1], b"part of a checkpoint")
"""


def test_a_writer_killed_mid_checkpoint_leaves_a_temporary_the_next_run_removes(tmp_path):
    out = tmp_path / "run"
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(out / "checkpoint.pt")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout.readline() == "writing\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    (left,) = temporaries(out)
    assert left.startswith(".checkpoint.pt.")
    trainer = LocalTrainer.from_manifest(json.loads(json.dumps(TINY)))
    trainer.train(verbose=False, output_dir=out)
    assert temporaries(out) == []


def test_clean_stale_temporaries_matches_target_names(tmp_path):
    for name in (".a.pt.x1.tmp", ".b.json.y2.tmp", ".tmp", "..tmp", ".a.pt.tmp"):
        (tmp_path / name).write_text("")
    assert [p.name for p in clean_stale_temporaries(tmp_path, ("a.pt",))] == [".a.pt.x1.tmp"]
    assert sorted(p.name for p in clean_stale_temporaries(tmp_path)) == [
        ".a.pt.tmp",  # a temporary of the file named "a"
        ".b.json.y2.tmp",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["..tmp", ".tmp"]


HOLD = """
import sys, time
from agilerl.files.atomic import DirectoryLock
DirectoryLock.for_directory(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path):
    """A live process (another run, as far as the lock knows) holding ``tmp_path/run``."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_a_second_run_on_a_held_out_directory_is_refused(holder, tmp_path, capsys):
    rc, out = train_cli(tmp_path)
    err = capsys.readouterr().err
    assert rc == 1
    assert f"agilerl: {out}: in use by another run (pid {holder.pid})" in err
    assert "Traceback" not in err
    assert not (out / "checkpoint.pt").exists()  # refused before any work
    trainer = LocalTrainer.from_manifest(json.loads(json.dumps(TINY)))
    with pytest.raises(OutputInUseError, match=f"pid {holder.pid}"):
        trainer.train(verbose=False, output_dir=out)  # the Python API is held off too


def test_a_lock_left_by_a_killed_run_does_not_block_the_next(holder, tmp_path, capsys):
    holder.send_signal(signal.SIGKILL)  # no chance to release anything
    holder.wait()
    rc, out = train_cli(tmp_path)
    assert rc == 0, capsys.readouterr().err
    assert (out / "history.json").exists()


def test_a_checkpoint_outside_the_output_directory_is_held_too(tmp_path):
    checkpoint = tmp_path / "shared" / "ck.pt"
    with DirectoryLock(checkpoint.parent / ".ck.pt.lock", str(checkpoint)):
        trainer = LocalTrainer.from_manifest(json.loads(json.dumps(TINY)))
        with pytest.raises(OutputInUseError, match=f"{checkpoint}: in use by another run"):
            trainer.train(verbose=False, output_dir=tmp_path / "run", checkpoint_path=checkpoint)
    with DirectoryLock.for_directory(tmp_path / "a"):  # one lock per directory, not global
        DirectoryLock.for_directory(tmp_path / "b").acquire().release()


def test_an_out_directory_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "run").write_text("not a directory")
    rc, out = train_cli(tmp_path)
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("agilerl:")]
    assert str(out) in line and "not a directory" in line


def test_schema_and_init_write_atomically(tmp_path, monkeypatch, capsys):
    target = tmp_path / "manifest.json"
    target.write_text("previous")
    disk_full_for(monkeypatch, "manifest.json", "dqn.yaml")
    assert main(["schema", "-o", str(target)]) == 1
    assert main(["init", "DQN", "-o", str(tmp_path / "dqn.yaml")]) == 1
    err = capsys.readouterr().err
    assert f"agilerl: {target}: cannot write (No space left on device)" in err
    assert f"agilerl: {tmp_path / 'dqn.yaml'}: cannot write" in err
    assert "Traceback" not in err
    assert target.read_text() == "previous" and not (tmp_path / "dqn.yaml").exists()
    assert temporaries(tmp_path) == []


# --- code named by a manifest ------------------------------------------------------------

ENV_FILE = """
import gymnasium as gym
import pathlib

pathlib.Path("imported.marker").touch()  # proves when the module is imported


def make(length=50):
    return gym.wrappers.TimeLimit(gym.make("CartPole-v1").unwrapped, length)


def nothing():
    return None


def vector():
    return gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")])


def broken():
    raise RuntimeError("no such level")


def not_a_wrapper(env):
    return {"env": env}
"""


@pytest.fixture
def env_dir(tmp_path, monkeypatch):
    (tmp_path / "envs.py").write_text(ENV_FILE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def manifest_file(directory: Path, environment: dict) -> Path:
    path = directory / "m.yaml"
    document = {**json.loads(json.dumps(TINY)), "environment": environment}
    path.write_text(json.dumps(document))
    return path


def test_os_system_entrypoint_is_listed_then_refused_by_what_it_returns(env_dir, capsys):
    environment = {
        "name": "evil",
        "entrypoint": "os:system",
        "config": {"command": "touch ran.marker"},
        "sync": True,
    }
    path = manifest_file(env_dir, environment)
    assert main(["validate", str(path)]) == 0
    assert "code: environment.entrypoint -> os:system (module os" in capsys.readouterr().out
    assert not (env_dir / "ran.marker").exists()  # validating shows the code, never runs it
    assert main(["train", str(path), "--out", str(env_dir / "run")]) == 1
    err = capsys.readouterr().err
    listed = err.index("code: environment.entrypoint -> os:system (module os")
    refused = err.index(
        "agilerl: environment.entrypoint: os:system returned int 0, not a gymnasium.Env"
    )
    assert listed < refused  # shown before it ran
    assert (env_dir / "ran.marker").exists()  # it is code, and it ran: that is why it is shown
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ({"entrypoint": "envs.py:nothing"}, "environment.entrypoint: envs.py:nothing returned NoneType None"),
        ({"entrypoint": "envs.py:vector"}, "environment.entrypoint: envs.py:vector returned SyncVectorEnv"),
        ({"entrypoint": "envs.py:broken"}, "environment.entrypoint: envs.py:broken raised RuntimeError: no such level"),
        ({"entrypoint": "envs.py:make", "wrappers": ["envs.py:not_a_wrapper"]}, "environment.wrappers.0: envs.py:not_a_wrapper returned dict {'env': "),
        ({"entrypoint": "envs.py:make", "wrappers": [{"wrapper": "envs.py:nothing", "kwargs": {}}]}, "environment.wrappers.0: envs.py:nothing: "),
        ({"wrappers": ["builtins.id"]}, "environment.wrappers.0: builtins.id returned int"),
    ],
)  # fmt: skip
def test_what_an_entrypoint_or_wrapper_returns_must_be_an_env(env_dir, environment, message):
    spec = GymEnvSpec(name="CartPole-v1", **environment)
    with pytest.raises(EnvironmentSpecError) as caught:
        make_env(spec)
    assert message in str(caught.value)


def test_a_real_entrypoint_and_wrapper_still_build(env_dir):
    env = make_env(
        GymEnvSpec(
            name="x",
            entrypoint="envs.py:make",
            config={"length": 5},
            wrappers=["gymnasium.wrappers.RecordEpisodeStatistics"],
        )
    )
    # the manifest's wrapper, inside the engine's own outermost one (agilerl.guards.user_code)
    assert isinstance(env, UserEnv) and isinstance(env.env, gym.wrappers.RecordEpisodeStatistics)
    env.close()


def test_validate_lists_every_piece_of_code_and_imports_none(env_dir, capsys):
    environment = {
        "name": "grid",
        "entrypoint": "envs.py:make",
        "path": str(env_dir),
        "wrappers": [
            "gymnasium.wrappers.RecordEpisodeStatistics",
            {"wrapper": "my_wrappers:Clip", "kwargs": {"low": -1}},
        ],
    }
    path = manifest_file(env_dir, environment)
    env_dir = env_dir.resolve()
    assert main(["validate", str(path)]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()[1:]]
    assert lines == [
        f"code: environment.entrypoint -> envs.py:make (file {env_dir / 'envs.py'}, "
        "imported when the run starts)",
        "code: environment.wrappers.0 -> gymnasium.wrappers.RecordEpisodeStatistics (module "
        f"gymnasium.wrappers, looked up in {env_dir} first, imported when the run starts)",
        f"code: environment.wrappers.1 -> my_wrappers:Clip (module my_wrappers, looked up in "
        f"{env_dir} first, imported when the run starts)",
        "environment: envs.py:make, 16 copies, one worker process each by AsyncVectorEnv "
        "(vectorize: async, the default)",
    ]
    assert not (env_dir / "imported.marker").exists()
    assert main(["validate", str(path), "--format", "json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out).values()
    assert [(c["field"], c["kind"]) for c in entry["code"]] == [
        ("environment.entrypoint", "file"),
        ("environment.wrappers.0", "module"),
        ("environment.wrappers.1", "module"),
    ]


def test_train_prints_the_code_before_importing_it(env_dir, capsys):
    environment = {"name": "grid", "entrypoint": "envs.py:make", "sync": True, "num_envs": 2}
    path = manifest_file(env_dir, environment)
    assert main(["train", str(path), "--out", str(env_dir / "run"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert (
        f"code: environment.entrypoint -> envs.py:make (file {env_dir.resolve() / 'envs.py'}" in err
    )
    assert (env_dir / "imported.marker").exists()


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (ROOT / "configs/dqn.yaml", []),
        (ROOT / "configs/ippo.yaml", [("environment.name", "mpe2.simple_speaker_listener_v4:parallel_env")]),
        (ROOT / "tests/manifest_corpus/valid/grpo_llm.yaml", [("environment.reward_file_path", "reward.py:combined_rewards")]),
        ({**TINY, "environment": {"name": "my_pkg:Grid-v0"}}, [("environment.name", "my_pkg:Grid-v0")]),
    ],
    ids=["registered-id", "pettingzoo-module", "llm-reward", "gymnasium-module-prefix"],
)  # fmt: skip
def test_code_references_cover_every_code_naming_field(document, expected):
    manifest = load_manifest(document) if isinstance(document, Path) else parse_manifest(document)
    assert [(ref.field, ref.target) for ref in code_references(manifest)] == expected
