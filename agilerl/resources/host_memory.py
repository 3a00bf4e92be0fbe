"""How much memory this process may still allocate, for the checks made before an
allocation (the pre-flight of a run, the size limit of a checkpoint read)."""

from __future__ import annotations

import os
from pathlib import Path


def available_memory() -> int | None:
    """Bytes this process may still allocate: the kernel's MemAvailable, lowered by a
    cgroup (container) limit when there is one; None when unknown."""
    found = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(used))
    except (OSError, ValueError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError):
            return None
    return max(0, min(found))
