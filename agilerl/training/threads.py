"""How many CPU threads torch uses for a run's networks.

torch's default, one intra-op thread per core, suits large matrix products. The agents
of most RL runs are small MLPs and CNNs evaluated on small batches: each operation is
too short to split, and the threads then mostly spin and wait for each other. On a
machine where anything else runs, a spinning thread that loses its core holds up the
whole operation (a 2-core machine under load measured 7 updates/s with two threads
against 575 with one). So, unless the user chose (:data:`ENV_VAR`, ``--threads``,
``LocalTrainer(num_threads=...)``, or ``OMP_NUM_THREADS``, which torch itself reads):

* an agent on the CPU with fewer than :data:`SMALL_AGENT` parameters runs on one thread;
* a larger one gets a thread per core that the environment workers leave free
  (an ``async`` vectorisation runs one process per environment), of this process's
  share of the machine's cores when a launcher started several on it
  (``LOCAL_WORLD_SIZE``);
* an agent on an accelerator leaves torch's setting alone.

A count the user gives is at most :func:`cores` (:func:`requested_threads`), checked by
the pre-flight before anything is built.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

#: Environment variable that sets the thread count of every run (a positive integer).
ENV_VAR = "AGILERL_NUM_THREADS"
#: Agents with fewer parameters than this (all networks together) run on one thread.
SMALL_AGENT = 1_000_000


def cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def local_processes() -> int:
    """Processes of the run on this machine (the launcher's ``LOCAL_WORLD_SIZE``; 1)."""
    text = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else 1


def requested_threads(explicit: int | None) -> int | None:
    """The thread count the user asked for: ``explicit``, else :data:`ENV_VAR`; None
    when neither is set. A count that is not positive, or above the cores this process
    may run on (:func:`cores`), is a ``ValueError`` naming where it came from: 100,000
    threads crashed libgomp (a segfault) and 5,000 on two cores made a 20-second run take
    minutes, each thread spinning for a core it did not get."""
    if explicit is not None:
        return _within_cores(explicit, "num_threads")
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{ENV_VAR}={text!r}: expected a positive number of threads")
    return _within_cores(int(text), ENV_VAR)


def _within_cores(count: int, source: str) -> int:
    if count < 1:
        raise ValueError(f"{source}: {count} is not a positive number of threads")
    available = cores()
    if count > available:
        raise ValueError(
            f"{source}: {count:,} threads is more than the {available} CPU cores this "
            f"process may run on (its affinity); give at most {available}"
        )
    return count


def agent_parameters(agent: Any) -> int:
    """Parameters of all of an agent's networks (shared ones once); 0 for no agent (a
    command acting at random)."""
    if agent is None:
        return 0
    return sum(param.numel() for param in agent.network_parameters())


def choose_threads(
    explicit: int | None, agent: Any, device: torch.device, env_workers: int
) -> int | None:
    """The thread count for a run of ``agent`` (see the module), or None to leave
    torch's own setting (an accelerator run, or ``OMP_NUM_THREADS`` set)."""
    requested = requested_threads(explicit)
    if requested is not None:
        return requested
    if device.type != "cpu" or os.environ.get("OMP_NUM_THREADS"):
        return None
    if agent_parameters(agent) < SMALL_AGENT:
        return 1
    share = cores() // local_processes()
    return max(1, min(torch.get_num_threads(), share - env_workers))


def apply_threads(
    explicit: int | None, agent: Any, device: torch.device, env_workers: int = 0
) -> int:
    """Set torch's thread count for work with ``agent`` (None: no networks) by
    :func:`choose_threads`, and return the count in effect. Every command that runs torch
    (``agilerl train``, ``evaluate``, ``dataset collect``, ``llm tiny``) sets it here; a
    count the user gave that is not allowed is the ``ValueError`` of
    :func:`requested_threads`."""
    threads = choose_threads(explicit, agent, device, env_workers)
    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


@contextmanager
def restored_threads() -> Iterator[None]:
    """Run the block, then put torch's thread count back as it was: a run's choice
    (:func:`apply_threads`) ends with the run, for whoever called it in-process."""
    before = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def single_thread() -> Iterator[None]:
    """Run the block on one torch thread, then restore the count. Agents are built in
    it: with more threads torch's orthogonal initialisation (a QR factorisation) and
    matrix products round differently, so a seed's initial weights, and the whole run
    after them, would depend on the machine's core count and ``OMP_NUM_THREADS``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
