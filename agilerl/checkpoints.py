"""Checkpoint files: written atomically, verified on read.

A checkpoint is a small header (magic, payload length, SHA-256 of the payload) followed
by the ``torch.save`` payload. It is written to a temporary file in the target directory,
flushed to disk and renamed over the target, so a reader sees the old file or the new
one, never half of one; a truncated or corrupted file fails the length or hash check and
is refused with :class:`CheckpointError` instead of a deep unpickling traceback.
"""

from __future__ import annotations

import hashlib
import io
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import torch

MAGIC = b"AGILERL-CKPT\x00\x01"
_HEADER = struct.Struct(f"<{len(MAGIC)}sQ32s")


class CheckpointError(ValueError):
    """A checkpoint file is missing, not a checkpoint, damaged or of the wrong kind."""


def save(obj: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``obj`` (tensors, dicts, numpy arrays, spaces) to ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    payload = buffer.getvalue()
    header = _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest())
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header)
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path: str | os.PathLike[str], kind: str | None = None) -> Any:
    """Read a checkpoint written by :func:`save`; ``kind`` checks its ``"kind"`` entry."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such checkpoint file") from None
    except IsADirectoryError:
        raise CheckpointError(f"{path}: is a directory, not a checkpoint file") from None
    if len(data) < _HEADER.size or not data.startswith(MAGIC):
        raise CheckpointError(f"{path}: not an agilerl checkpoint (bad header)")
    _, length, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size :]
    if len(payload) != length:
        raise CheckpointError(
            f"{path}: damaged checkpoint (truncated: {len(payload)} of {length} payload "
            "bytes); resume from an earlier checkpoint"
        )
    if hashlib.sha256(payload).digest() != digest:
        raise CheckpointError(f"{path}: damaged checkpoint (checksum mismatch)")
    obj = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=False)
    if kind is not None and (not isinstance(obj, dict) or obj.get("kind") != kind):
        found = obj.get("kind") if isinstance(obj, dict) else type(obj).__name__
        raise CheckpointError(f"{path}: expected a {kind} checkpoint, found {found!r}")
    return obj
