"""Start a test's script as N processes of one run, the way torchrun would."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
        **(env or {}),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(processes),
        "LOCAL_WORLD_SIZE": str(processes),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def start(argv: list[str], processes: int, *, env: dict[str, str] | None = None) -> list:
    """``sys.executable *argv`` started once per rank (``subprocess.Popen``, text output
    captured), in rank order."""
    port = free_port()
    return [
        subprocess.Popen(
            [sys.executable, *argv],
            env=rank_env(rank, processes, port, env),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(processes)
    ]


def launch(
    argv: list[str], processes: int, *, env: dict[str, str] | None = None, timeout: float = 300
) -> list[subprocess.CompletedProcess]:
    """Run ``argv`` as ``processes`` ranks of one run; wait for all (killing every rank
    if one outlives ``timeout``); return them in rank order."""
    procs = start(argv, processes, env=env)
    done = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return done
