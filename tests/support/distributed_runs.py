"""Start a test's script as N processes of one run, the way torchrun would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

from support import ROOT, TESTS


def free_port() -> int:
    """A TCP port nothing listens on now (the rendezvous store's)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rank_env(rank: int, processes: int, port: int, env: dict[str, str] | None) -> dict[str, str]:
    """The environment a launcher gives rank ``rank``."""
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        # A rank started from a test file imports the shared helpers the way pytest does.
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(TESTS), str(ROOT), os.environ.get("PYTHONPATH")])
        ),
        **(env or {}),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(processes),
        "LOCAL_WORLD_SIZE": str(processes),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def start(argv: list[str], processes: int, *, env: dict[str, str] | None = None) -> list:
    """``sys.executable *argv`` started once per rank (``subprocess.Popen``), in rank
    order. Output goes to temporary files (``proc.output_files``), not pipes: a rank
    blocked on a full pipe would hold up the others in the next collective."""
    port = free_port()
    procs = []
    for rank in range(processes):
        files = (tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+"))
        proc = subprocess.Popen(
            [sys.executable, *argv],
            env=rank_env(rank, processes, port, env),
            cwd=ROOT,
            stdout=files[0],
            stderr=files[1],
            text=True,
        )
        proc.output_files = files
        procs.append(proc)
    return procs


def finished(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    """A process that ended, with its output."""
    texts = []
    for handle in proc.output_files:
        handle.seek(0)
        texts.append(handle.read())
        handle.close()
    return subprocess.CompletedProcess(proc.args, proc.returncode, *texts)


def launch(
    argv: list[str], processes: int, *, env: dict[str, str] | None = None, timeout: float = 300
) -> list[subprocess.CompletedProcess]:
    """Run ``argv`` as ``processes`` ranks of one run; wait for all (killing every rank
    if one outlives ``timeout``); return them in rank order."""
    procs = start(argv, processes, env=env)
    deadline = time.monotonic() + timeout
    try:
        for proc in procs:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [finished(proc) for proc in procs]
