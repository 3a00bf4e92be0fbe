"""Distributed training: a population sharded over processes and machines
(:mod:`agilerl.distributed.group`), and how a dead rank is found
(:mod:`agilerl.distributed.liveness`).

The names below load :mod:`~agilerl.distributed.group` (and torch) on first use, so that
:mod:`~agilerl.distributed.launcher` and :mod:`~agilerl.distributed.liveness`, which the
command line reads before it validates a manifest, come without torch."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agilerl.distributed.group import Group, PeerLost, current_group, join, leave

__all__ = ["Group", "PeerLost", "current_group", "join", "leave"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'agilerl.distributed' has no attribute {name!r}")
    return getattr(importlib.import_module("agilerl.distributed.group"), name)
