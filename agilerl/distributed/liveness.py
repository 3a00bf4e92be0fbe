"""Finding a rank that died, within a bounded time.

A rank killed with ``kill -9`` sends nothing: the others would wait for it in the next
collective until the process group's timeout (hours: generations may be long). So each
rank runs a watch (a daemon thread) that beats a counter in the run's rendezvous store
(torch.distributed's ``TCPStore`` at ``MASTER_ADDR:MASTER_PORT``, the one every launcher
sets up) every few seconds and reads the others'. A rank whose counter stops for
:data:`ENV_VAR` seconds (default :data:`DEFAULT_TIMEOUT`), or a store that stops
answering (it lives in rank 0, or in the launcher under torchrun), ends this rank with an
error that names the rank, exit code :data:`EXIT_CODE`; the run then resumes from its last
checkpoint. A rank that finished normally says so first (:func:`stop`) and is not
waited for.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from datetime import timedelta

#: Seconds without a heartbeat after which a rank counts as dead (a positive number).
ENV_VAR = "AGILERL_PEER_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
#: Exit status of a rank that stopped because another rank is gone.
EXIT_CODE = 75

_watch: Watch | None = None


class PeerTimeoutSettingError(ValueError):
    """:data:`ENV_VAR` holds something that is not a timeout (one line naming it)."""


def peer_timeout() -> float:
    """:data:`ENV_VAR`, or the default; a bad value is a :class:`PeerTimeoutSettingError`
    naming it."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value > 0):
        raise PeerTimeoutSettingError(
            f"{ENV_VAR}={text[:40]!r}: expected a positive number of seconds"
        )
    return value


class Watch(threading.Thread):
    """Beats this rank's counter and watches the others' (see the module)."""

    def __init__(self, rank: int, world_size: int, timeout: float) -> None:
        super().__init__(name="agilerl-liveness", daemon=True)
        self.rank = rank
        self.others = [r for r in range(world_size) if r != rank]
        self.timeout = timeout
        self.interval = min(2.0, timeout / 5)
        self.address = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        # A connection of its own: the thread never shares one with the process group.
        import torch.distributed as dist  # here: the CLI reads peer_timeout() before torch

        # torch.distributed re-exports TCPStore from its C extension without listing it.
        self.store = dist.TCPStore(  # pyright: ignore[reportPrivateImportUsage]
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            is_master=False,
            timeout=timedelta(seconds=timeout),
        )
        # Keys of this launch only: torchrun's store outlives a restarted attempt.
        self.prefix = f"agilerl/liveness/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
        self.stopped = threading.Event()
        self.verdict: str | None = None

    def key(self, kind: str, rank: int) -> str:
        return f"{self.prefix}/{kind}/{rank}"

    def run(self) -> None:
        seen = {rank: (-1, time.monotonic()) for rank in self.others}
        finished: set[int] = set()
        while not self.stopped.wait(self.interval):
            try:
                self.store.add(self.key("beat", self.rank), 1)
                for rank in self.others:
                    if rank in finished or self.store.check([self.key("done", rank)]):
                        finished.add(rank)
                        continue
                    count = self.store.add(self.key("beat", rank), 0)
                    if count != seen[rank][0]:
                        seen[rank] = (count, time.monotonic())
            except Exception as err:  # the store is gone: whichever error its client raises
                if self.stopped.is_set():
                    return
                self.fail(
                    f"lost the run's rendezvous store at {self.address} ({first_line(err)}): "
                    "rank 0 (or the launcher), which holds it, is gone"
                )
            now = time.monotonic()
            for rank in self.others:
                if rank not in finished and now - seen[rank][1] > self.timeout:
                    self.fail(
                        f"rank {rank} stopped responding: no heartbeat for "
                        f"{self.timeout:g} s (killed, crashed or unreachable)"
                    )

    def fail(self, verdict: str) -> None:
        """End this process: the run cannot go on without the lost rank."""
        self.verdict = verdict
        print(
            f"agilerl (rank {self.rank}): {verdict}. This rank stops too; resume the run from "
            "its last checkpoint (agilerl train MANIFEST --resume, on any number of processes).",
            file=sys.stderr,
            flush=True,
        )
        os._exit(EXIT_CODE)

    def finish(self) -> None:
        try:
            self.store.set(self.key("done", self.rank), "1")
        except Exception:  # noqa: BLE001 - the store may already be gone at the very end
            pass


def watch(rank: int, world_size: int) -> Watch:
    """Start this process's watch (once)."""
    global _watch
    if _watch is None:
        _watch = Watch(rank, world_size, peer_timeout())
        _watch.start()
    return _watch


def stop(done: bool = True) -> None:
    """Stop watching; ``done``: this rank ended normally, so the others stop waiting for
    it (a rank that fails says nothing: its silence tells them)."""
    global _watch
    if _watch is not None:
        if done:
            _watch.finish()
        _watch.stopped.set()
        # Out of the store's client before the interpreter ends: a thread still inside it
        # then would abort the process.
        _watch.join(timeout=2 * _watch.interval + 1)
        _watch = None


def explain(message: str) -> str:
    """``message`` about a failed collective, once the watch has had time to find the
    rank that died (it ends the process itself when it does)."""
    if _watch is None:
        return message
    deadline = time.monotonic() + _watch.timeout + 3 * _watch.interval
    while time.monotonic() < deadline and _watch.verdict is None:
        time.sleep(_watch.interval)
    return f"{message} ({_watch.verdict or 'no rank stopped beating: a network failure?'})"


def first_line(err: BaseException) -> str:
    """An error's message without the C++ stack torch.distributed appends to some."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
