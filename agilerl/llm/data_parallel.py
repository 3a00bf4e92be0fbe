"""Data-parallel LLM fine-tuning: every process holds the whole population and takes its
share of every batch.

A run launched on N processes (``accelerate launch``, ``torchrun``, ``agilerl train
--processes N``) joins torch.distributed's default process group
(:func:`agilerl.distributed.join`); the LLM family then trains data-parallel rather than
sharding its population:

* every rank draws the same global batch of ``batch_size`` rows (the environment's
  shuffle is seeded alike everywhere) and keeps the contiguous block
  ``rank * batch_size / N`` to ``(rank + 1) * batch_size / N`` (:meth:`DataParallel.share`);
  ``batch_size`` must be a multiple of N. Nothing about the global batch depends on N;
* GRPO generates and scores the completions of its own prompts only; each completion is
  sampled from a stream of its own, keyed by its row of the global batch, so the
  completions are the ones a single process would sample;
* losses are normalised by the GLOBAL counts (tokens, pairs, chunks), and after the
  backward passes of a step the active adapter's gradients are summed over the ranks
  (:meth:`DataParallel.sum_gradients`): the step is the one a single process takes on the
  whole batch, so every rank's adapter stays identical;
* evaluation splits each test batch over the ranks and sums what it counts, so every
  rank computes the same fitness (and evolution decides the same everywhere);
* LoRA dropout draws from a stream of each rank's own (:meth:`DataParallel.own_stream`).
  Its masks fall on other rows than a single process's, so with dropout a run is alike
  in distribution, not to the float, on 1 and N processes (without it: to float noise).

Why not ``Accelerator.prepare`` (DDP) on the model: the population's adapters live in ONE
peft model over the shared base (:class:`~agilerl.llm.adapters.SharedBase`), and peft's
``set_adapter`` moves ``requires_grad`` from one agent's adapter to the next on every
turn, while clones add adapters after any wrapping. DDP fixes the parameters it
synchronises (those requiring a gradient when it is built) and its reducer buckets once,
so it would synchronise a stale adapter set, or need re-wrapping every agent turn;
``generate`` must bypass the wrapper anyway. So the one all-reduce DDP would do per
optimiser step is done here, on the active adapter's gradients alone (a few MB at most):
torch.distributed's ``all_reduce``, once per step after the chunked backward passes
(gradient accumulation: the chunks accumulate locally, as under DDP's ``no_sync``).
Accelerate's multi-CPU mode is no help either: on a machine without CUDA it only joins a
process group when asked for ``cpu=True`` / ``--cpu`` (otherwise it silently runs each
process alone), which is why the run joins through :func:`agilerl.distributed.join`.
DeepSpeed and FSDP shard parameters across ranks, which a per-agent adapter on a shared
base does not survive; a launch configured for them is refused (:func:`launch_refusals`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

#: Environment variables ``accelerate launch`` sets for the strategies refused here.
SHARDED_STRATEGIES = {"ACCELERATE_USE_DEEPSPEED": "DeepSpeed", "ACCELERATE_USE_FSDP": "FSDP"}


@dataclass(frozen=True)
class DataParallel:
    """This process's place in a data-parallel run: ``rank`` of ``world_size``. Alone
    (rank 0 of 1) every operation returns its input unchanged, so a single-process run
    computes exactly what it always did."""

    rank: int = 0
    world_size: int = 1

    @classmethod
    def current(cls) -> DataParallel:
        """The run's: torch.distributed's default group once joined, else one process."""
        from agilerl.distributed.group import current_group

        group = current_group()
        return cls(group.rank, group.world_size)

    @property
    def alone(self) -> bool:
        return self.world_size == 1

    def share(self, rows: int, field: str = "batch_size") -> slice:
        """This rank's contiguous block of a global batch of ``rows`` rows; ``rows`` must
        be a multiple of the number of processes (``field`` names where it came from)."""
        check_divisible(rows, self.world_size, field)
        size = rows // self.world_size
        return slice(self.rank * size, (self.rank + 1) * size)

    def split(self, rows: int) -> slice:
        """This rank's block of ``rows`` rows that need not split evenly (a test batch):
        the first ``rows % world_size`` ranks take one row more; a block may be empty."""
        base, extra = divmod(rows, self.world_size)
        start = self.rank * base + min(self.rank, extra)
        return slice(start, start + base + (1 if self.rank < extra else 0))

    def sum(self, value: Any) -> Any:
        """``value`` (a tensor, or a list of numbers, which travel as float64) summed over
        the ranks, on every rank; the input itself when alone."""
        if self.alone:
            return value
        if torch.is_tensor(value):
            total = value.detach().to(_wire(), copy=True)
            dist.all_reduce(total)
            return total.to(value.device)
        numbers = torch.tensor(value, dtype=torch.float64, device=_wire())
        dist.all_reduce(numbers)
        return numbers.tolist()

    def gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Every rank's ``tensor`` (the same shape on each) concatenated along the first
        dimension in rank order: the global batch's rows, in order."""
        if self.alone:
            return tensor
        local = tensor.detach().to(_wire()).contiguous()
        parts = [torch.empty_like(local) for _ in range(self.world_size)]
        dist.all_gather(parts, local)
        return torch.cat(parts).to(tensor.device)

    def own_stream(self) -> contextlib.AbstractContextManager[None]:
        """torch's random stream, for the training forwards (LoRA dropout), this rank's
        own: every rank holds the same generator state (evolve seeds it alike), so without
        this rank 1's rows would drop what rank 0's rows drop. The stream is drawn from
        the shared one, which every rank advances alike. Alone: the stream as it is."""
        if self.alone:
            return contextlib.nullcontext()
        return _rank_stream(int(torch.randint(2**62, ())), self.rank)

    def sum_gradients(self, params: list[torch.nn.Parameter]) -> None:
        """Sum the gradients of ``params`` over the ranks in place (one flattened
        all-reduce). A parameter without a gradient counts as zero, so every rank sends
        the same layout."""
        if self.alone or not params:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        flat = torch.cat([g.reshape(-1) for g in grads]).to(_wire())
        dist.all_reduce(flat)
        flat = flat.to(grads[0].device)
        offset = 0
        for param, grad in zip(params, grads, strict=True):
            size = grad.numel()
            param.grad = flat[offset : offset + size].view_as(grad).clone()
            offset += size


@contextlib.contextmanager
def _rank_stream(draw: int, rank: int) -> Iterator[None]:
    cuda = [torch.cuda.current_device()] if torch.cuda.is_initialized() else []
    with torch.random.fork_rng(devices=cuda):
        state = np.random.SeedSequence([draw, rank]).generate_state(2, np.uint32)
        torch.manual_seed(int(state[0]) << 31 | int(state[1]) >> 1)
        yield


def _wire() -> torch.device:
    """Where tensors must be to cross processes: NCCL moves CUDA tensors only (this
    rank's GPU), gloo CPU ones."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def check_divisible(rows: int, processes: int, field: str) -> None:
    """A ValueError naming ``field`` when ``rows`` does not split over ``processes``."""
    if rows % processes:
        raise ValueError(
            f"{field}: {rows} rows per batch do not split evenly over the {processes} "
            f"processes of this run (each process takes batch_size / {processes} rows of "
            f"every batch); use a multiple of {processes}"
        )


def launch_refusals() -> list[str]:
    """Why this launch cannot train an LLM run data-parallel (one message each)."""
    return [
        f"{name}: the launch asks for {strategy}, which shards parameters across processes; "
        "the LLM family trains per-agent LoRA adapters on one shared base and synchronises "
        "their gradients itself (data-parallel): launch without the "
        f"{strategy} configuration"
        for name, strategy in SHARDED_STRATEGIES.items()
        if os.environ.get(name, "false").strip().lower() in ("1", "true")
    ]
