"""Opening a file that is read whole: only a regular one.

A FIFO with no writer (or a terminal) would block its reader forever, and a device or a
directory has no size to bound a read by. :func:`open_regular` opens without blocking
(opening a FIFO waits for a writer otherwise) and checks the kind on the open
descriptor, so nothing can swap the file between the check and the read. Each reader
(checkpoints, manifests) words the refusal for its own file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: What a file that is not a regular one is, by ``stat`` mode test (for a refusal).
FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class NotRegularFile(Exception):
    """The path names something other than a regular file; ``kind`` says what (None
    where :data:`FILE_KINDS` does not know it)."""

    def __init__(self, kind: str | None) -> None:
        super().__init__(kind or "not a regular file")
        self.kind = kind


def open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at ``path`` and its ``fstat``; the
    caller closes it. :class:`NotRegularFile` (nothing left open) for any other kind;
    ``os.open``'s ``OSError`` passes through."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(next((name for test, name in FILE_KINDS if test(info.st_mode)), None))
    return fd, info
