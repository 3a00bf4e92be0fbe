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

import copy
import os
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from agilerl.models.base import AlgorithmNotAvailableError
from agilerl.training.envs import make_env


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
#: Per-step extras of an on-policy rollout (log-probability, reward, done, value,
#: advantage, return) as float32.
ROLLOUT_EXTRA_BYTES = 6 * 4
#: Reward (float64) and done flag (bool) of a stored transition.
TRANSITION_EXTRA_BYTES = 8 + 1


def _size(n: float) -> str:
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


@dataclass
class Estimate:
    """What a run allocates, part by part."""

    needs: list[Need] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(need.bytes for need in self.needs)

    def largest(self) -> Need:
        return max(self.needs, key=lambda need: need.bytes)


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


def _check_tracking(training: Any) -> None:
    """The tracking backends asked for are installed (optional extras), and TensorBoard's
    directory can be written."""
    from agilerl.training.tracking import unavailable

    missing = unavailable(training)
    if missing:
        raise PreflightError("; ".join(missing))
    if training.tensorboard_log_dir is not None:
        check_directory(training.tensorboard_log_dir, "training.tensorboard_log_dir")


# --- memory -----------------------------------------------------------------------------


def _sample_bytes(space: Any) -> int:
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


def _agent_bytes(agent: Any) -> int:
    """Parameters of every network of an agent, optimised ones with their gradient and
    optimiser moments."""
    total = sum(p.numel() * p.element_size() for p in agent.network_parameters())
    for nets, _ in agent.optimizer_specs.values():
        for attr in nets:
            total += OPTIMISED_COPIES * sum(
                p.numel() * p.element_size() for p in getattr(agent, attr).parameters()
            )
    return total


@contextmanager
def _parameters_on_meta() -> Iterator[None]:
    """Every parameter a module registers moves to the meta device at once, before its
    initialisation writes it: the parameter's host memory is reserved, never used."""
    register = torch.nn.Module.register_parameter

    def on_meta(module: torch.nn.Module, name: str, param: Any) -> None:
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register  # type: ignore[method-assign]


def _build_one_env(spec: Any) -> tuple[Any, int]:
    """One environment of ``spec`` and the bytes its construction allocated."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    try:
        env = make_env(spec)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        if not tracing:
            tracemalloc.stop()
    return env, max(used, MIN_ENV_BYTES)


def estimate(trainer: Any) -> Estimate:
    """What ``trainer``'s run will allocate: population, environments and buffers."""
    algorithm, training, spec = trainer.algorithm, trainer.training, trainer.environment
    env, env_bytes = _build_one_env(spec)
    try:
        obs_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    num_envs = spec.num_envs
    shim = SimpleNamespace(
        single_observation_space=obs_space, single_action_space=action_space, num_envs=num_envs
    )
    # On the meta device: the agent's tensors get shapes but no storage, so an
    # oversized network is measured, not allocated.
    probe = copy.copy(trainer)
    probe.device, probe.accelerator = torch.device("meta"), None
    try:
        with _parameters_on_meta():
            agent = probe._build_agent(shim, 0, 0)
    except NotImplementedError as err:  # a feature the engine lacks (recurrent PPO)
        if isinstance(err, AlgorithmNotAvailableError):
            raise
        raise PreflightError(f"algorithm: {err}") from None
    obs, action = _sample_bytes(obs_space), _sample_bytes(action_space)
    per_agent = _agent_bytes(agent)
    pop = training.pop_size
    needs = [
        Need(
            "training.pop_size",
            f"{pop:,} agents of {_size(per_agent)} (networks, gradients, optimiser "
            f"state; {GENERATIONS_ALIVE} generations alive during selection)",
            GENERATIONS_ALIVE * pop * per_agent,
        )
    ]
    per_env = env_bytes + 2 * obs + (0 if spec.sync else WORKER_PROCESS_BYTES)
    kind = "in this process" if spec.sync else "each in a worker process"
    needs.append(
        Need(
            "environment.num_envs",
            f"{num_envs:,} environments of {_size(per_env)} ({kind})",
            num_envs * per_env,
        )
    )
    if trainer.evolving:  # each slot's tournament draws its entrants' indices at once
        size = trainer.selection_strategy.tournament_size
        needs.append(
            Need(
                "selection_strategy.tournament_size",
                f"tournaments of {size:,} entrants (8 B each)",
                8 * size,
            )
        )
    if algorithm.off_policy or algorithm.offline:
        transition = 2 * obs + action + TRANSITION_EXTRA_BYTES
        size = trainer.replay_buffer.max_size if trainer.replay_buffer else _default_buffer()
        needs.append(
            Need(
                "replay_buffer.max_size",
                f"{size:,} transitions of {_size(transition)}",
                size * transition,
            )
        )
        buffers = trainer.replay_buffer
        if buffers is not None and buffers.per_buffer:
            needs.append(
                Need(
                    "replay_buffer.per_buffer",
                    f"priorities of {size:,} slots ({PRIORITY_BYTES} B each, their sum tree "
                    "included)",
                    size * PRIORITY_BYTES,
                )
            )
        if buffers is not None and buffers.n_step_buffer:
            row = transition + N_STEP_EXTRA_BYTES
            needs.append(
                Need(
                    "replay_buffer.n_step_buffer",
                    f"an n-step buffer beside it: {size:,} transitions of {_size(row)}",
                    size * row,
                )
            )
        needs.append(
            Need(
                "algorithm.batch_size",
                f"batches of {algorithm.batch_size:,} transitions of {_size(transition)}",
                algorithm.batch_size * transition,
            )
        )
    else:  # on-policy: a rollout of learn_step steps (whole vector steps) per agent
        steps = -(-agent.learn_step // num_envs) * num_envs
        per_step = obs + action + ROLLOUT_EXTRA_BYTES
        needs.append(
            Need(
                "algorithm.learn_step",
                f"rollouts of {steps:,} steps of {_size(per_step)}, one per agent",
                pop * steps * per_step,
            )
        )
    return Estimate(needs)


def _default_buffer() -> int:
    from agilerl.models.training import ReplayBufferSpec

    return ReplayBufferSpec().max_size


def _check_batch(trainer: Any) -> None:
    algorithm = trainer.algorithm
    if not (algorithm.off_policy or algorithm.offline):
        return
    size = trainer.replay_buffer.max_size if trainer.replay_buffer else _default_buffer()
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
    raise PreflightError(
        f"{biggest.field}: {biggest.detail} need {_size(biggest.bytes)}; the run needs about "
        f"{_size(found.total)} in all and this machine has {_size(available)} available"
    )


def preflight(
    trainer: Any, output_dir: str | Path | None = None, available: int | None = None
) -> Estimate | None:
    """Check that ``trainer`` (a :class:`~agilerl.training.LocalTrainer` with its final
    training spec) can run here; returns the memory estimate, raises
    :class:`PreflightError` otherwise (an environment or agent that cannot be built
    raises its own clear error: ``EnvironmentSpecError``, ``TrainerError``).
    ``available`` is the memory to fit in (default: what this machine has free)."""
    if output_dir is not None:
        check_directory(output_dir, "output directory")
    if trainer.training.checkpoint_path is not None:
        check_file(trainer.training.checkpoint_path, "training.checkpoint_path")
    _check_tracking(trainer.training)
    return trainer.family.preflight(trainer, available)


def check_rl_run(trainer: Any, available: int | None = None) -> Estimate:
    """The single-agent family's checks: the replay buffer against the batch size, then
    the memory estimate against what this machine has (``available``)."""
    _check_batch(trainer)
    found = estimate(trainer)
    check_memory(found, available_memory() if available is None else available)
    return found


# --- LLM runs ---------------------------------------------------------------------------

#: Mutation kinds that change a network's architecture or weights: an LLM agent trains a
#: LoRA adapter on a frozen pretrained model, so none of them can apply.
ARCHITECTURE_MUTATIONS = {
    "arch_mut": "architecture mutations",
    "params_mut": "weight-noise mutations",
    "act_mut": "activation mutations",
}


#: Training settings of RL loops that an LLM run has no use for: refused, not ignored.
LLM_UNUSED = {
    "training.learning_delay": "LLM agents learn from their first batch",
    "training.eval_steps": "LLM agents are evaluated on the whole test split "
    "(training.eval_loop passes)",
    **{
        f"training.{name}": "LLM agents explore by sampling (algorithm.temperature), not "
        "epsilon-greedy"
        for name in ("eps_start", "eps_end", "eps_decay")
    },
}


def check_llm_run(trainer: Any) -> None:
    """The LLM family's checks, before any step: fields the machine cannot honour
    (:func:`agilerl.algorithms.llm.refusals`), mutations that cannot apply, then the
    model directory, the dataset and the reward file and function (loaded here; the run
    reuses the model)."""
    from agilerl.algorithms.llm import refusals

    problems = [f"algorithm.{why}" for why in refusals(trainer.algorithm, trainer.device)]
    problems += [
        f"{name}: {LLM_UNUSED[name]}; remove it" for name in _set_fields(trainer, LLM_UNUSED)
    ]
    if trainer.replay_buffer is not None:
        problems.append(
            "replay_buffer: LLM agents learn from fresh batches of their dataset, not from a "
            "replay buffer; remove the section"
        )
    if trainer.evolving:
        probabilities = trainer.mutation.probabilities
        problems += [
            f"mutation.probabilities.{name}: {getattr(probabilities, name)} > 0, but an LLM "
            f"agent fine-tunes a LoRA adapter on a fixed pretrained model, so {what} do not "
            "apply; set it to 0 (rl_hp_mut mutates lr, beta, group_size)"
            for name, what in ARCHITECTURE_MUTATIONS.items()
            if getattr(probabilities, name) > 0
        ]
    if problems:
        raise PreflightError("; ".join(problems))
    from agilerl.training.trainer import TrainerError

    try:
        env = trainer.family.make_env(trainer)  # loads the model, dataset and reward fn
    except TrainerError as err:
        raise PreflightError(str(err)) from None
    trainer.family.close_env(env)


# --- multi-agent runs -------------------------------------------------------------------

#: Single-agent settings a multi-agent run has no use for: field -> why.
MULTI_AGENT_UNUSED = {
    "replay_buffer.per_buffer": "prioritised replay is not implemented for multi-agent teams",
    "replay_buffer.n_step_buffer": "n-step returns are not implemented for multi-agent teams",
    "training.eps_start": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
    "training.eps_end": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
    "training.eps_decay": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
}


def _set_fields(trainer: Any, unused: dict[str, str] = MULTI_AGENT_UNUSED) -> list[str]:
    """The fields of ``unused`` (a family's table of settings it has no use for) the
    run sets."""
    found = []
    for name in unused:
        section, key = name.split(".")
        spec = getattr(trainer, section, None)
        if spec is not None and getattr(spec, key, None) not in (None, False):
            found.append(name)
    return found


def check_multi_agent_run(trainer: Any, available: int | None = None) -> Estimate:
    """The multi-agent family's checks: settings that do not apply to a team, the replay
    buffer against the batch size, then the memory estimate against what this machine
    has (``available``)."""
    unused = _set_fields(trainer)
    if unused:
        raise PreflightError(
            "; ".join(f"{name}: {MULTI_AGENT_UNUSED[name]}; remove it" for name in unused)
        )
    _check_batch(trainer)
    found = estimate_multi_agent(trainer)
    check_memory(found, available_memory() if available is None else available)
    return found


def estimate_multi_agent(trainer: Any) -> Estimate:
    """What a multi-agent run allocates: teams, environments, replay rows or rollouts
    (every agent's observation and action per row)."""
    from agilerl.multi_agent.envs import make_parallel_env

    algorithm, training, spec = trainer.algorithm, trainer.training, trainer.environment
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    try:
        env = make_parallel_env(spec)
        env_bytes = max(tracemalloc.get_traced_memory()[0] - before, MIN_ENV_BYTES)
    finally:
        if not tracing:
            tracemalloc.stop()
    try:
        ids = list(env.possible_agents)
        obs_spaces = {a: env.observation_space(a) for a in ids}
        act_spaces = {a: env.action_space(a) for a in ids}
    finally:
        env.close()
    num_envs = spec.num_envs
    shim = SimpleNamespace(
        observation_spaces=obs_spaces, action_spaces=act_spaces, num_envs=num_envs
    )
    probe = copy.copy(trainer)
    probe.device, probe.accelerator = torch.device("meta"), None
    with _parameters_on_meta():
        team = probe._build_agent(shim, 0, 0)
    obs = sum(_sample_bytes(space) for space in obs_spaces.values())
    action = sum(_sample_bytes(space) for space in act_spaces.values())
    per_team = _agent_bytes(team)
    pop = training.pop_size
    needs = [
        Need(
            "training.pop_size",
            f"{pop:,} teams of {_size(per_team)} ({len(ids)} agents in "
            f"{len(team.groups)} groups; {GENERATIONS_ALIVE} generations alive during "
            "selection)",
            GENERATIONS_ALIVE * pop * per_team,
        )
    ]
    per_env = env_bytes + 2 * obs + (0 if spec.sync else WORKER_PROCESS_BYTES)
    kind = "in this process" if spec.sync else "each in a worker process"
    needs.append(
        Need(
            "environment.num_envs",
            f"{num_envs:,} environments of {_size(per_env)} ({kind})",
            num_envs * per_env,
        )
    )
    if algorithm.off_policy:
        row = 2 * obs + action + len(ids) * (TRANSITION_EXTRA_BYTES + 1)  # + active
        size = trainer.replay_buffer.max_size if trainer.replay_buffer else _default_buffer()
        needs.append(
            Need(
                "replay_buffer.max_size",
                f"{size:,} rows of every agent's transition ({_size(row)})",
                size * row,
            )
        )
        needs.append(
            Need(
                "algorithm.batch_size",
                f"batches of {algorithm.batch_size:,} rows of {_size(row)}",
                algorithm.batch_size * row,
            )
        )
    else:
        steps = -(-team.learn_step // num_envs) * num_envs
        per_step = obs + action + len(ids) * (ROLLOUT_EXTRA_BYTES + 1)
        needs.append(
            Need(
                "algorithm.learn_step",
                f"rollouts of {steps:,} steps of every agent ({_size(per_step)})",
                steps * per_step,  # one team trains at a time
            )
        )
    return Estimate(needs)


# --- bandit runs ------------------------------------------------------------------------

#: Settings of the other RL loops a bandit run has no use for: field -> why.
BANDIT_UNUSED = {
    "training.learning_delay": "bandit agents learn once the memory holds a batch",
    **{
        f"training.{name}": "bandit agents explore by their confidence bound or posterior "
        "samples (algorithm.gamma), not epsilon-greedy"
        for name in ("eps_start", "eps_end", "eps_decay")
    },
    "replay_buffer.per_buffer": "prioritised replay is not implemented for bandits",
    "replay_buffer.n_step_buffer": "a bandit step has no next state to take n steps from",
}


def check_bandit_run(trainer: Any, available: int | None = None) -> Estimate:
    """The bandit family's checks, before any step: settings that do not apply to a
    bandit, the memory against the batch size, then the tables (loaded here: a missing
    file, row counts that differ or a value that is not a number is refused naming the
    file and row), then the memory estimate against what this machine has
    (``available``)."""
    problems = [
        f"{name}: {BANDIT_UNUSED[name]}; remove it" for name in _set_fields(trainer, BANDIT_UNUSED)
    ]
    size = trainer.replay_buffer.max_size if trainer.replay_buffer else _default_buffer()
    if trainer.algorithm.batch_size > size:
        problems.append(
            f"algorithm.batch_size: {trainer.algorithm.batch_size:,} is more than "
            f"replay_buffer.max_size ({size:,}): the memory never holds a whole batch, so "
            "no agent would ever learn"
        )
    target = trainer.training.target_score
    if target is not None and target > 1:
        problems.append(
            f"training.target_score: {target} can never be reached: a bandit's fitness is "
            "its reward rate, 0 to 1 (AgileRL's is the reward summed over eval_steps "
            "pulls); give the rate, e.g. 0.9"
        )
    if problems:
        raise PreflightError("; ".join(problems))
    from agilerl.training.trainer import TrainerError

    try:
        env = trainer.family.make_env(trainer)
    except TrainerError as err:
        raise PreflightError(str(err)) from None
    trainer.family.close_env(env)
    found = estimate_bandit(trainer, env, size)
    check_memory(found, available_memory() if available is None else available)
    return found


def estimate_bandit(trainer: Any, env: Any, size: int) -> Estimate:
    """What a bandit run allocates: the population (built on the meta device) and the
    shared memory of ``size`` pulls (a context of float32 and a float32 reward each)."""
    probe = copy.copy(trainer)
    probe.device, probe.accelerator = torch.device("meta"), None
    with _parameters_on_meta():
        agent = probe._build_agent(env, 0, 0)
    per_agent = _agent_bytes(agent) + agent.sigma_inv.numel() * agent.sigma_inv.element_size()
    pop = trainer.training.pop_size
    pull = 4 * env.context_dim + 4
    return Estimate(
        [
            Need(
                "training.pop_size",
                f"{pop:,} agents of {_size(per_agent)} (networks, gradients, optimiser "
                f"state, inverse design matrix; {GENERATIONS_ALIVE} generations alive "
                "during selection)",
                GENERATIONS_ALIVE * pop * per_agent,
            ),
            Need("replay_buffer.max_size", f"{size:,} pulls of {_size(pull)}", size * pull),
        ]
    )
