"""Distributed training: a population sharded over processes and machines
(:mod:`agilerl.distributed.group`), and how a dead rank is found
(:mod:`agilerl.distributed.liveness`)."""

from agilerl.distributed.group import Group, PeerLost, current_group, join, leave

__all__ = ["Group", "PeerLost", "current_group", "join", "leave"]
