"""What the launcher (torchrun, ``accelerate launch``) tells this process through its
environment, read without importing torch: the command line asks before it validates a
manifest, and a refused manifest must not wait for torch to load."""

from __future__ import annotations

import os


def launched_world_size() -> int:
    """The number of processes the launcher started (``WORLD_SIZE``; 1 without one)."""
    text = os.environ.get("WORLD_SIZE", "1").strip() or "1"
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"WORLD_SIZE={text!r}: expected a positive number of processes")
    return int(text)
