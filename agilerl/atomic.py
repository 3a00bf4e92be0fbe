"""Files that are replaced whole or not at all.

Every file the project writes for its user (checkpoints, agents, manifests, history,
plots) goes through :func:`write_bytes`: the bytes are written to a temporary file in
the target's directory, flushed and fsynced, then renamed over the target. A reader (or
a run killed at any moment, or a full disk) sees the previous file or the new one, never
part of one. A failed write raises :class:`OutputError` naming the file and the reason,
and leaves the previous file and no temporary behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: Temporaries are ``.<target name>.<random>.tmp`` next to the target.
TEMP_SUFFIX = ".tmp"


class OutputError(OSError):
    """An output file could not be written; the previous version (if any) is intact."""


def _temp_prefix(name: str) -> str:
    return f".{name}."


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=_temp_prefix(path.name), suffix=TEMP_SUFFIX, dir=path.parent
        )
    except OSError as err:
        raise OutputError(f"{path}: cannot write: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(
            f"{path}: cannot write ({err.strerror or err}); the previous file is unchanged"
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`write_bytes` for UTF-8 text."""
    return write_bytes(path, text.encode("utf-8"))


def clean_stale_temporaries(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove temporaries a killed writer left in ``directory``; returns what was removed.

    Call it only while holding the directory (the run lock), so no live writer's
    temporary is taken away.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    removed = []
    for entry in directory.iterdir():
        if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX) and entry.is_file():
            entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed
