"""Pre-flight: refuse, before the first step, a run that cannot finish.

A manifest can be valid and still describe a run this machine cannot hold (a billion
agents, a replay buffer of terabytes, a hundred thousand environment processes) or one
whose outputs cannot be written (``--out`` naming a file, a checkpoint path that is a
directory, a read-only folder). Both used to surface after a generation of work, with a
traceback and a poisoned checkpoint. :func:`preflight` finds them first, cheapest check
first: the paths (no environment needed), the tracking backends' packages (optional
extras: TensorBoard, W&B), the replay buffer against the batch size,
then one environment (not the vector) and one agent (on the meta device: shapes, no
storage) are built to learn the spaces and the size of an agent, and what the whole run allocates is estimated and compared with
the memory this machine has available. A refusal is a :class:`PreflightError` whose
message names the field and gives the figures.
"""

from __future__ import annotations

import os
import tempfile
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agilerl.resources.host_memory import available_memory
from agilerl.resources.meta_device import built_on_meta


class PreflightError(ValueError):
    """A run refused before it starts; the message names the field and why."""


#: Longest file name (one path component) of the common Linux file systems.
NAME_MAX = 255
#: Memory of one AsyncVectorEnv worker process beyond its environment (measured on Linux:
#: about 10 MiB proportional set size for a forked CartPole worker; rounded up).
WORKER_PROCESS_BYTES = 16 * 2**20
#: A prioritised slot: its raw priority and its leaf in the sum and minimum trees (float64
#: each), plus the upper levels (a 32-way tree adds about 1/31 of the leaves).
PRIORITY_BYTES = 25
#: An n-step row's extra field, ``discount`` (float32).
N_STEP_EXTRA_BYTES = 4
#: Least memory counted for one environment (a CartPole measures about 2.4 KiB).
MIN_ENV_BYTES = 4 * 2**10
#: Agents alive at once during selection: the old generation and the new one.
GENERATIONS_ALIVE = 2
#: Adam keeps two moment tensors per parameter and backpropagation one gradient.
OPTIMISED_COPIES = 3
#: What each network of an agent costs beyond its tensors (its modules, its optimiser's
#: objects, the allocator's slack). Calibrated by benchmarks/preflight_calibration.py
#: (resident set growth of 200 agents built as a run builds them, each after one
#: optimiser step, against the tensors counted on the meta device; CPU, torch 2.13):
#: per network, DQN 93-94 KiB ([64, 64] and [256, 256]: the overhead does not grow with
#: the layers), PPO 40 KiB, TD3 95 KiB, RainbowDQN 142 KiB; the largest, rounded up.
#: Tensors alone counted 181 KiB of the 367 KiB a default CartPole DQN measured.
NETWORK_OVERHEAD_BYTES = 144 * 2**10
#: Per-step extras of an on-policy rollout (log-probability, reward, done, value,
#: advantage, return) as float32.
ROLLOUT_EXTRA_BYTES = 6 * 4
#: Reward (float64) and done flag (bool) of a stored transition.
TRANSITION_EXTRA_BYTES = 8 + 1


def size_text(n: float) -> str:
    """Bytes in binary units: 37.0 TiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Need:
    """One part of a run's memory: the field that decides it, how, and how much."""

    field: str
    detail: str
    bytes: int
    #: Bytes of one agent, where the need is a population of them: one that alone does
    #: not fit is the network's size at fault, not the population's.
    one: int = 0


@dataclass
class Estimate:
    """What a run allocates, part by part."""

    needs: list[Need] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(need.bytes for need in self.needs)

    def largest(self) -> Need:
        return max(self.needs, key=lambda need: need.bytes)


# --- paths ------------------------------------------------------------------------------


def _probe(directory: Path, what: str) -> None:
    """Create and remove a file in ``directory``: the one test of writability that holds
    for every user, mount and file system."""
    try:
        fd, name = tempfile.mkstemp(prefix=".agilerl-preflight-", dir=directory)
    except OSError as err:
        raise PreflightError(f"{what}: cannot write in {directory}: {err.strerror}") from None
    os.close(fd)
    os.unlink(name)


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _usable(check: Any, path: str | Path, what: str) -> None:
    """Run a path check; a path the system cannot even look at (a NUL byte, a name too
    long) is refused like an unwritable one."""
    try:
        if "\x00" in str(path):  # os calls refuse it; pathlib's is_dir() says False
            raise ValueError("it holds a NUL character")
        check(Path(path), what)
    except (OSError, ValueError) as err:
        if isinstance(err, PreflightError):
            raise
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise PreflightError(f"{what}: {str(path)!r} is not a usable path: {reason}") from None


def check_directory(path: str | Path, what: str) -> None:
    """``path`` is, or can be created as, a directory this process can write in."""
    _usable(_check_directory, path, what)


def check_file(path: str | Path, what: str) -> None:
    """``path`` can be written as a file (atomically: a temporary beside it, renamed)."""
    _usable(_check_file, path, what)


def _check_directory(path: Path, what: str) -> None:
    if path.exists() and not path.is_dir():
        raise PreflightError(f"{what}: {path} exists and is not a directory")
    base = _existing_ancestor(path.absolute())
    if not base.is_dir():
        raise PreflightError(f"{what}: {path} cannot be created: {base} is not a directory")
    _probe(base, what)
    _check_names(path, what)


def _check_names(path: Path, what: str) -> None:
    """Every part of a path still to be created fits in a file name."""
    too_long = [part for part in path.parts if len(os.fsencode(part)) > NAME_MAX]
    if too_long:
        raise PreflightError(f"{what}: {too_long[0][:40]!r}... is too long a file name")


def _check_file(path: Path, what: str) -> None:
    if path.is_dir():
        raise PreflightError(f"{what}: {path} is a directory; name a file in one")
    parent = path.absolute().parent
    if path.exists() or not parent.is_dir():
        _check_directory(parent, what)  # replaced by a rename, or its folder is made
        _check_names(path, what)
        return
    try:  # the very name, created and removed: what the first write will need
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as err:
        raise PreflightError(f"{what}: cannot write {path}: {err.strerror}") from None
    os.unlink(path)


def check_tracking(training: Any) -> None:
    """The tracking backends asked for are installed (optional extras), and TensorBoard's
    directory can be written."""
    from agilerl.training.tracking import unavailable

    missing = unavailable(training)
    if missing:
        raise PreflightError("; ".join(missing))
    if training.tensorboard_log_dir is not None:
        check_directory(training.tensorboard_log_dir, "training.tensorboard_log_dir")


# --- memory -----------------------------------------------------------------------------


def sample_bytes(space: Any) -> int:
    """Bytes of one value of a Gymnasium space (every leaf of a Dict or Tuple)."""
    sample = space.sample()
    leaves: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, tuple):
            for item in value:
                walk(item)
        else:
            leaves.append(np.asarray(value))

    walk(sample)
    return int(sum(leaf.nbytes for leaf in leaves))


def tensor_bytes(agent: Any) -> int:
    """Parameters and buffers of every network of an agent (a noisy layer's noise is a
    buffer as large as its weight), optimised parameters with their gradient and two
    optimiser moments."""
    total = sum(p.numel() * p.element_size() for p in agent.network_parameters())
    seen: set[int] = set()
    for attr in agent._network_attrs():
        for buffer in getattr(agent, attr).buffers():
            if id(buffer) not in seen:
                seen.add(id(buffer))
                total += buffer.numel() * buffer.element_size()
    for nets, _ in agent.optimizer_specs.values():
        for attr in nets:
            total += OPTIMISED_COPIES * sum(
                p.numel() * p.element_size() for p in getattr(agent, attr).parameters()
            )
    return total


def agent_bytes(agent: Any) -> int:
    """What one agent of the run holds: its tensors (:func:`tensor_bytes`) and
    :data:`NETWORK_OVERHEAD_BYTES` for each of its networks."""
    return tensor_bytes(agent) + NETWORK_OVERHEAD_BYTES * len(agent._network_attrs())


def default_buffer() -> int:
    from agilerl.models.training import ReplayBufferSpec

    return ReplayBufferSpec().max_size


def population_need(pop: int, one: int, members: str, holds: str) -> Need:
    """The ``training.pop_size`` line every family's estimate opens with: ``pop``
    ``members`` ("agents", "teams") of ``one`` bytes each (``holds``: what one is made
    of), :data:`GENERATIONS_ALIVE` generations of them alive while selection runs."""
    return Need(
        "training.pop_size",
        f"{pop:,} {members} of {size_text(one)} ({holds}; {GENERATIONS_ALIVE} generations "
        "alive during selection)",
        GENERATIONS_ALIVE * pop * one,
        one=one,
    )


def environments_need(num_envs: int, per_env: int, how: str) -> Need:
    """The ``environment.num_envs`` line: ``num_envs`` copies of ``per_env`` bytes each,
    run ``how`` (natively, in this process, each in a worker process)."""
    return Need(
        "environment.num_envs",
        f"{num_envs:,} environments of {size_text(per_env)} ({how})",
        num_envs * per_env,
    )


def replay_cohort_need(
    ctx: Any, num_envs: int, per_copy: int, buffer_rows: int, row: int, who: str
) -> Need:
    """The ``training.cohorts`` line of an off-policy run whose agents (``who``: "agent"
    or "team") train in cohorts: a cohort steps a copy of the environments per agent, in
    this process (``per_copy`` bytes each), and holds each agent's rows of a generation
    (``row`` bytes each, at most ``buffer_rows``) beside the shared buffer."""
    pop = ctx.training.pop_size
    evo_steps = ctx.training.evo_steps or ctx.algorithm.default_evo_steps
    rows = min(evo_steps + num_envs, buffer_rows)
    return Need(
        "training.cohorts",
        f"{pop:,} x {num_envs:,} environment copies stepped together in this process, and "
        f"each {who}'s {rows:,} transitions of a generation",
        pop * num_envs * per_copy + pop * rows * row,
    )


def check_batch(ctx: Any) -> None:
    """The replay buffer holds at least one batch."""
    algorithm = ctx.algorithm
    if not (algorithm.off_policy or algorithm.offline):
        return
    size = ctx.replay_buffer.max_size if ctx.replay_buffer else default_buffer()
    if algorithm.batch_size > size:
        raise PreflightError(
            f"algorithm.batch_size: {algorithm.batch_size:,} is more than "
            f"replay_buffer.max_size ({size:,}): the buffer never holds a whole batch, so "
            "no agent would ever learn"
        )


def check_memory(found: Estimate, available: int | None) -> None:
    if available is None or found.total <= available:
        return
    biggest = found.largest()
    if biggest.one > available:
        raise PreflightError(
            f"network: one agent alone needs {size_text(biggest.one)} (its networks, "
            f"gradients and optimiser state) and this machine has {size_text(available)} "
            "available; make its layers smaller"
        )
    raise PreflightError(
        f"{biggest.field}: {biggest.detail} need {size_text(biggest.bytes)}; the run needs about "
        f"{size_text(found.total)} in all and this machine has {size_text(available)} available"
    )


def check_outputs(training: Any, output_dir: str | Path | None = None) -> None:
    """The checks every run makes before its family's: the output directory and the
    checkpoint file can be written, the tracking backends asked for are installed."""
    if output_dir is not None:
        check_directory(output_dir, "output directory")
    if training.checkpoint_path is not None:
        check_file(training.checkpoint_path, "training.checkpoint_path")
    check_tracking(training)


def set_fields(ctx: Any, unused: dict[str, str]) -> list[str]:
    """The fields of ``unused`` (a family's table of ``section.field`` -> why it has no
    use for it) that the run sets: to anything but None, False, 0 or the field's
    default (``warmup_actions: policy`` is what every family does)."""
    found = []
    for name in unused:
        section, key = name.split(".")
        spec = getattr(ctx, section, None)
        if spec is None:
            continue
        field = getattr(type(spec), "model_fields", {}).get(key)
        default = None if field is None else field.default
        if getattr(spec, key, None) not in (None, False, default):
            found.append(name)
    return found


def refuse_unused(ctx: Any, unused: dict[str, str]) -> list[str]:
    """One problem per field of ``unused`` the run sets: ``field: why; remove it``."""
    return [f"{name}: {unused[name]}; remove it" for name in set_fields(ctx, unused)]


def traced_bytes(build: Any) -> tuple[Any, int]:
    """``build()`` and the bytes its construction allocated (at least
    :data:`MIN_ENV_BYTES`: an environment is never counted as free)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    try:
        made = build()
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    return made, max(used, MIN_ENV_BYTES)


def meta_agent(ctx: Any, env: Any) -> Any:
    """One agent of the run built on the meta device: its tensors get shapes but no
    storage, so an oversized network is measured, not allocated."""

    with built_on_meta():
        return ctx.agent(env, 0, 0, device=torch.device("meta"))


def check_fits(found: Estimate, available: int | None) -> Estimate:
    """:func:`check_memory` against ``available`` bytes (None: what this machine has
    available now); returns ``found``."""
    check_memory(found, available_memory() if available is None else available)
    return found
