"""The processes a run is spread over, and what the generation loop asks of them.

A run launched by ``accelerate launch``, ``torchrun`` or ``agilerl train --processes N``
finds its rank and the number of processes in the launcher's environment (``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``) and joins torch.distributed's default
process group (:func:`join`: gloo on the CPU, NCCL on CUDA). Everything that crosses
processes goes through that group: gathering fitness records and experience, and moving
an agent whose parent lives on another rank. A run on one process uses the same
:class:`Group` (rank 0 of 1), whose operations are then local, so there is one code path.

The population is split into contiguous blocks of slots, one per rank
(:meth:`Group.slots`): with 4 agents on 2 processes rank 0 trains slots 0 and 1 (slot 0
holds the elite), rank 1 slots 2 and 3.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from agilerl.distributed import liveness
from agilerl.distributed.launcher import launched_world_size
from agilerl.distributed.liveness import first_line

#: How long a collective may wait for the other ranks before the process group gives
#: up. Generous on purpose: a rank may still be training its agents (generations can
#: last minutes); a rank that died is found much sooner by the liveness watch
#: (:mod:`agilerl.distributed.liveness`).
COLLECTIVE_TIMEOUT = timedelta(hours=6)


#: Whether :func:`join` joined the process group (and :func:`leave` then leaves it); a
#: group the caller (or accelerate) set up is theirs to end.
_joined = False


class PeerLost(RuntimeError):
    """Another rank of the run is gone (killed, crashed or unreachable)."""


T = TypeVar("T")


def _to_cpu(value: object) -> object:
    """``value`` with every tensor in it on the CPU: what crosses processes is plain data,
    whatever device the sender trains on."""
    if torch.is_tensor(value):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {key: _to_cpu(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_to_cpu(item) for item in value)
    return value


@dataclass(frozen=True)
class Group:
    """This process's place in the run: ``rank`` of ``world_size`` processes.

    ``replicas``: every rank holds the whole population (the LLM family, which trains
    data-parallel instead of sharding its agents): :meth:`slots` is every slot and
    :meth:`all_gather` returns this rank's object alone, since every rank computed the
    same."""

    rank: int = 0
    world_size: int = 1
    replicas: bool = False

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that prints, writes checkpoints and outputs."""
        return self.rank == 0

    @property
    def shards(self) -> bool:
        """Whether the population is split over more than one process."""
        return self.world_size > 1 and not self.replicas

    def replicated(self) -> Group:
        return replace(self, replicas=True)

    def local_device(self, device: str | torch.device) -> torch.device:
        """``device`` for this process: a bare ``cuda`` on several processes is the GPU
        of the process's ``LOCAL_RANK`` (one GPU per process, as launchers assign)."""
        device = torch.device(device)
        if self.world_size > 1 and device.type == "cuda" and device.index is None:
            return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        return device

    def _bounds(self, pop_size: int) -> list[int]:
        if pop_size < self.world_size:
            raise ValueError(
                f"training.pop_size: {pop_size} agents cannot be shared among "
                f"{self.world_size} processes (each trains at least one): use at most "
                f"{pop_size} processes or a larger population"
            )
        base, extra = divmod(pop_size, self.world_size)
        bounds = [0]
        for rank in range(self.world_size):
            bounds.append(bounds[-1] + base + (1 if rank < extra else 0))
        return bounds

    def slots(self, pop_size: int) -> list[int]:
        """The population slots this rank trains and evaluates."""
        if not self.shards:
            return list(range(pop_size))
        bounds = self._bounds(pop_size)
        return list(range(bounds[self.rank], bounds[self.rank + 1]))

    def owner(self, slot: int, pop_size: int) -> int:
        """The rank that holds population slot ``slot``."""
        if not self.shards:
            return self.rank
        bounds = self._bounds(pop_size)
        return next(rank for rank in range(self.world_size) if slot < bounds[rank + 1])

    # -- what crosses processes ---------------------------------------------------------
    def all_gather(self, obj: T) -> list[T]:
        """Every rank's ``obj``, in rank order, on every rank."""
        if not self.shards:
            return [obj]
        gathered: list[Any] = [None] * self.world_size
        _collective("gathering the generation's results", dist.all_gather_object, gathered, obj)
        return gathered

    def slowest(self, *seconds: float) -> tuple[float, ...]:
        """Each of ``seconds`` as its largest value over every process of the run (a
        replicated group's too): times each rank measured on its own clock, made ones
        every rank agrees on, so decisions taken on them (a wall-clock limit) agree."""
        if self.world_size == 1:
            return seconds
        gathered: list[Any] = [None] * self.world_size
        _collective("agreeing on the wall time", dist.all_gather_object, gathered, seconds)
        return tuple(max(times[i] for times in gathered) for i in range(len(seconds)))

    def gather_to_main(self, obj: T) -> list[T] | None:
        """Every rank's ``obj`` in rank order on rank 0 (None on the others)."""
        if not self.shards:
            return [obj]
        gathered: list[Any] | None = [None] * self.world_size if self.is_main else None
        _collective("gathering agents for a checkpoint", dist.gather_object, obj, gathered, 0)
        return gathered

    def send(self, obj: object, dst: int) -> None:
        """Send ``obj`` (plain data; tensors go as CPU tensors) to rank ``dst``."""
        _collective(f"sending an agent to rank {dst}", dist.send_object_list, [_to_cpu(obj)], dst)

    def recv(self, src: int) -> Any:
        """What rank ``src`` sends with :meth:`send`."""
        box: list[Any] = [None]
        _collective(f"receiving an agent from rank {src}", dist.recv_object_list, box, src)
        return box[0]


def _collective(what: str, operation: Callable[..., object], *args: object) -> None:
    """Run a torch.distributed operation; a failure (a peer that died mid-operation) is
    a :class:`PeerLost` that names the dead rank once the liveness watch knows it."""
    try:
        operation(*args)
    except (RuntimeError, ConnectionError) as err:
        message = f"the process group failed while {what}: {first_line(err)}"
        raise PeerLost(liveness.explain(message)) from None


def current_group() -> Group:
    """The run's group: torch.distributed's default group once joined, else one process."""
    if dist.is_available() and dist.is_initialized():
        return Group(dist.get_rank(), dist.get_world_size())
    return Group()


def _init_process_group(backend: str, world_size: int) -> None:
    """torch.distributed's ``env://`` join, with the rendezvous store built here so that
    reaching it is bounded by the liveness timeout, not the collectives' hours: a rank
    whose peers never come (one killed while starting) stops with an error instead of
    waiting. Under torchrun the launcher holds the store (``TORCHELASTIC_USE_AGENT_STORE``)
    and every rank connects to it; otherwise rank 0 holds it, as ``env://`` does."""
    try:
        rank = int(os.environ["RANK"])
        host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    except (KeyError, ValueError) as err:
        raise PeerLost(
            f"WORLD_SIZE={world_size} but the launcher's RANK / MASTER_ADDR / MASTER_PORT "
            f"are missing or not numbers ({err}): start the run with torchrun, accelerate "
            "launch or agilerl train --processes N"
        ) from None
    timeout = liveness.peer_timeout()
    hosts = rank == 0 and os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True"
    try:
        # torch.distributed re-exports TCPStore from its C extension without listing it.
        store = dist.TCPStore(  # pyright: ignore[reportPrivateImportUsage]
            host, port, world_size, is_master=hosts, timeout=timedelta(seconds=timeout)
        )
        dist.init_process_group(
            backend, store=store, rank=rank, world_size=world_size, timeout=COLLECTIVE_TIMEOUT
        )
    except (RuntimeError, ConnectionError) as err:  # torch's DistError is a RuntimeError
        raise PeerLost(
            f"rank {rank} could not join the run's {world_size} processes through the "
            f"rendezvous store at {host}:{port} within {timeout:g} s ({first_line(err)}): "
            "did every rank start, and can each reach that address?"
        ) from None


def join(device: str | torch.device = "cpu") -> Group:
    """Join the run's process group when a launcher started several processes
    (``WORLD_SIZE`` > 1), once; start the liveness watch; return :func:`current_group`.
    On CUDA each process takes the GPU of its ``LOCAL_RANK``."""
    world_size = launched_world_size()
    if world_size > 1 and not dist.is_initialized():
        cuda = torch.device(device).type == "cuda"
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        _init_process_group("nccl" if cuda else "gloo", world_size)
        global _joined
        _joined = True
        atexit.register(_abandon)  # a rank that ends on an error: see _abandon
    group = current_group()
    if group.world_size > 1:
        liveness.watch(group.rank, group.world_size)
    return group


def _abandon() -> None:
    """At exit of a rank that did not :func:`leave` (it failed): stop the watch without
    telling the others it finished (they find it silent), and drop the process group."""
    liveness.stop(done=False)
    if _joined and dist.is_initialized():
        dist.destroy_process_group()


def leave() -> None:
    """The run ended normally: stop watching (the others no longer wait for this rank)
    and leave the process group, where :func:`join` joined it."""
    global _joined
    liveness.stop()
    if _joined and dist.is_initialized():
        dist.destroy_process_group()
    _joined = False
