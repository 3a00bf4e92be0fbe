"""How much memory this process may still allocate (agilerl/resources/host_memory.py):
the kernel's MemAvailable, lowered by a cgroup limit, else the free physical pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from agilerl.resources import host_memory
from agilerl.resources.host_memory import available_memory

GIB = 1 << 30


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A fake /proc and /sys under tmp_path: write files there as the kernel would."""
    monkeypatch.setattr(host_memory, "Path", lambda path: tmp_path / str(path).lstrip("/"))

    def write(path: str, text: str) -> None:
        target = tmp_path / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    return write


def _meminfo(kib: int) -> str:
    return f"MemTotal:       99999999 kB\nMemAvailable:   {kib} kB\nBuffers: 1 kB\n"


def test_mem_available_is_the_answer_without_a_cgroup_limit(machine):
    machine("/proc/meminfo", _meminfo(8 * 1024 * 1024))
    machine("/sys/fs/cgroup/memory.max", "max\n")
    machine("/sys/fs/cgroup/memory.current", str(GIB))
    assert available_memory() == 8 * GIB


def test_a_cgroup_limit_lowers_it_by_what_the_cgroup_already_uses(machine):
    machine("/proc/meminfo", _meminfo(8 * 1024 * 1024))
    machine("/sys/fs/cgroup/memory.max", f"{3 * GIB}\n")
    machine("/sys/fs/cgroup/memory.current", f"{GIB}\n")
    assert available_memory() == 2 * GIB


def test_a_cgroup_over_its_limit_has_nothing_left_not_a_negative_amount(machine):
    machine("/proc/meminfo", _meminfo(8 * 1024 * 1024))
    machine("/sys/fs/cgroup/memory.max", str(GIB))
    machine("/sys/fs/cgroup/memory.current", str(2 * GIB))
    assert available_memory() == 0


def test_without_proc_or_cgroup_files_the_free_physical_pages_answer(machine, monkeypatch):
    pages = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(host_memory.os, "sysconf", pages.__getitem__)
    assert available_memory() == 1000 * 4096


def test_unknown_when_nothing_says(machine, monkeypatch):
    def unsupported(name):
        raise ValueError(name)

    monkeypatch.setattr(host_memory.os, "sysconf", unsupported)
    assert available_memory() is None


def test_on_this_machine_it_is_a_byte_count():
    assert Path("/proc/meminfo").exists() or pytest.skip("no /proc/meminfo here")
    found = available_memory()
    assert isinstance(found, int) and found > 0
