"""Files that are replaced whole or not at all, and directories one run holds at a time.

Every file the project writes for its user (checkpoints, agents, manifests, history,
plots, schemas) goes through :func:`write_bytes`: the bytes are written to a temporary
file in the target's directory, flushed and fsynced, then renamed over the target. A
reader (or a run killed at any moment, or a full disk) sees the previous file or the new
one, never part of one. A failed write raises :class:`OutputError` naming the file and
the reason, and leaves the previous file and no temporary behind.

A run holds its output directory with :class:`DirectoryLock` (``flock`` on a lock file):
a second run on the same directory is refused while the first lives, and the kernel
drops the lock when its holder dies, however it dies, so a crashed run never leaves the
directory stuck. Temporaries that a killed writer left are removed by
:func:`clean_stale_temporaries`, under the lock.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

#: Temporaries are ``.<target name>.<random>.tmp`` next to the target.
TEMP_SUFFIX = ".tmp"
#: The lock file a run holds in its output directory.
LOCK_NAME = ".lock"


class OutputError(OSError):
    """An output file could not be written; the previous version (if any) is intact."""


class OutputInUseError(OutputError):
    """Another live run holds the output directory (or checkpoint) this run would write."""


def _temp_prefix(name: str) -> str:
    return f".{name}."


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


_umask: int | None = None


def _new_file_mode(path: Path) -> int:
    """The mode a plain ``open(path, "w")`` would give (mkstemp makes 0600 files)."""
    global _umask
    try:
        return path.stat().st_mode & 0o7777  # replacing a file keeps its mode
    except OSError:
        pass
    if _umask is None:  # read once: os.umask can only be read by setting it
        _umask = os.umask(0o022)
        os.umask(_umask)
    return 0o666 & ~_umask


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable; filesystems that cannot do this are left be."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=_temp_prefix(path.name), suffix=TEMP_SUFFIX, dir=path.parent
        )
    except FileExistsError:
        raise OutputError(f"{path}: cannot write: a parent is a file, not a directory") from None
    except OSError as err:
        raise OutputError(f"{path}: cannot write ({_reason(err)})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), _new_file_mode(path))
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(
            f"{path}: cannot write ({_reason(err)}); the previous file is unchanged"
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)
    return path


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`write_bytes` for UTF-8 text."""
    return write_bytes(path, text.encode("utf-8"))


def _target_of(temporary: str) -> str | None:
    """The target name a temporary of :func:`write_bytes` was for, or None."""
    if not (temporary.startswith(".") and temporary.endswith(TEMP_SUFFIX)):
        return None
    target, dot, _random = temporary[1 : -len(TEMP_SUFFIX)].rpartition(".")
    return target if dot and target else None


def clean_stale_temporaries(
    directory: str | os.PathLike[str], targets: Iterable[str] = ("*",)
) -> list[Path]:
    """Remove temporaries a killed writer left in ``directory``; returns what was removed.

    ``targets``: glob patterns of the target names whose temporaries are removed (the
    default, every one). Call it only while holding the directory (:class:`DirectoryLock`),
    so no live writer's temporary is taken away.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    patterns = tuple(targets)
    removed = []
    for entry in directory.iterdir():
        target = _target_of(entry.name)
        if target is None or not any(fnmatch.fnmatchcase(target, p) for p in patterns):
            continue
        if entry.is_file():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


#: Lock files this process holds, closed in forked children (which must not keep a
#: dead parent's directory held).
_held: set[int] = set()


def _forget_held_locks() -> None:
    for fd in list(_held):
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_held_locks)


class DirectoryLock:
    """An exclusive hold on ``lock_file`` (``<directory>/.lock`` for an output directory).

    ``acquire`` raises :class:`OutputInUseError` with the holder's pid while another live
    process holds it, and :class:`OutputError` when the directory cannot be created or
    written. The lock file stays behind (removing it would race a newcomer); only the
    kernel lock, released when the holder exits or dies, counts.

    ``what`` names the held thing in messages (default: the lock file's directory).
    """

    def __init__(self, lock_file: str | os.PathLike[str], what: str | None = None) -> None:
        self.path = Path(lock_file)
        self.what = what or str(self.path.parent)
        self._fd: int | None = None

    @classmethod
    def for_directory(cls, directory: str | os.PathLike[str]) -> DirectoryLock:
        return cls(Path(directory) / LOCK_NAME, str(directory))

    def acquire(self) -> DirectoryLock:
        import fcntl  # POSIX only; imported here so writing files works everywhere

        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise OutputError(f"{directory}: exists and is not a directory") from None
        except OSError as err:
            raise OutputError(f"{directory}: cannot write here ({_reason(err)})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            by = f"another run (pid {holder})" if holder.isdigit() else "another run"
            raise OutputInUseError(
                f"{self.what}: in use by {by}; wait for it to finish or choose another "
                "output directory"
            ) from None
        except OSError as err:
            os.close(fd)
            raise OutputError(f"{self.path}: cannot lock ({_reason(err)})") from None
        try:  # the pid is for the message a second run prints; a full disk is no reason to fail
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        self._fd = fd
        _held.add(fd)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        _held.discard(self._fd)
        os.close(self._fd)  # closing the last descriptor drops the flock
        self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
