"""Run checkpoints: a whole training run at a generation boundary, in one file.

A run checkpoint holds every agent (networks, optimisers, hyperparameters, metrics, RNG
state), the replay buffer's contents (off-policy; its priorities when prioritised, and
the n-step buffer beside it where there is one), the selection and mutation operators'
random generators, the global torch / numpy / python RNG states, the run's progress
(:class:`~agilerl.training.evolution.RunState`), the best agent ever evaluated (the
"elite", kept apart from the population so later mutation cannot touch it) and the
manifest it was started from (:data:`RUN_LAYOUT`). It is a :mod:`agilerl.files.checkpoints`
file: data only, written atomically (a run killed at any moment leaves the previous checkpoint intact), and
checked part by part before a resumed run uses any of it (:func:`restore`).
"""

from __future__ import annotations

import fnmatch
import json
import random
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from agilerl.files import checkpoints
from agilerl.training.state import RunState

KIND = "run"

#: One generation's record in the run's history (written by the generation loop, read
#: by the progress report, the plot and ``history.json``).
HISTORY_RECORD = {
    "generation": int,
    "steps": int,
    "env_steps": int,
    "seconds": float,
    "env_steps_per_s": float,
    "agents": checkpoints.ListOf(
        {
            "index": int,
            "fitness": float,
            "train_score": checkpoints.Nullable(float),
            "episodes": int,
            "metrics": checkpoints.MapOf(float),
            "env_steps": int,
            "env_steps_per_s": float,
            "mutation": str,
            "mutable": checkpoints.MapOf(object),
            "hyperparameters": checkpoints.MapOf(object),
        }
    ),
}

#: The parts of a run checkpoint and their types (agents: the agent layout, memory: the
#: replay buffer's; both checked when restored).
RUN_LAYOUT = {
    "kind": str,
    "state": {
        "seed": int,
        "generation": int,
        "steps": int,
        "env_steps": int,
        "seconds": float,
        "history": checkpoints.ListOf(HISTORY_RECORD),
        "finished": checkpoints.Nullable(str),
        "best": checkpoints.Nullable({"fitness": float, "generation": int, "index": int}),
    },
    "agents": checkpoints.ListOf(dict),
    "elite": checkpoints.Nullable(dict),  # the best agent ever evaluated (state.best)
    "memory": checkpoints.Nullable(dict),
    # The n-step buffer beside the replay buffer (Rainbow); absent where a run has none.
    "n_step_memory": checkpoints.Omittable(dict),
    # The environment's position (an LLM run's place in its dataset); absent where the
    # environment restarts from seeds instead (Gymnasium resets are seeded per generation).
    "env": checkpoints.Omittable(dict),
    "selection": checkpoints.Nullable(dict),
    "mutation": checkpoints.Nullable(dict),
    "rng": {"torch": torch.Tensor, "numpy": tuple, "python": tuple},
    "manifest": checkpoints.Omittable(dict),
}
#: What ``RunCheckpointer(extra=...)`` may add to a checkpoint.
EXTRA_KEYS = ("manifest",)

#: Manifest settings a resumed run may change (dotted paths, ``*`` wildcards): the
#: budget, where checkpoints go and where the metrics are tracked. Any other difference
#: is refused.
RESUMABLE = (
    "training.max_steps",
    "training.target_score",
    "training.max_wall_seconds",
    "training.checkpoint_*",
    "training.overwrite_checkpoints",
    "training.tensorboard_log_dir",
    "training.wandb",
)


def global_rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }


def check_global_rng_state(state: dict[str, Any], where: str = "rng") -> None:
    """Each saved global RNG state is accepted by a scratch generator of its kind, so
    :func:`set_global_rng_state` cannot fail half-way."""
    trials = (
        ("torch", lambda s: torch.Generator().set_state(s)),
        ("numpy", lambda s: np.random.RandomState().set_state(s)),
        ("python", lambda s: random.Random().setstate(s)),
    )
    for key, trial in trials:
        try:
            trial(state[key])
        except (TypeError, ValueError, RuntimeError, IndexError, OverflowError) as err:
            problem = f"not a valid {key} RNG state ({err})"
            raise checkpoints.fail(f"{where}.{key}", problem) from None


def set_global_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])


class RunCheckpointer:
    """Writes run checkpoints to ``path`` at generation boundaries.

    ``every``: env steps per agent between checkpoints (None: every generation).
    ``overwrite``: False also keeps a copy per checkpoint, ``<stem>_<steps><suffix>``,
    next to the latest one (which is always at ``path``, for resuming).
    ``extra``: more parts, of :data:`EXTRA_KEYS` (the run's manifest).
    ``env``: an environment whose position is saved (``state_dict()``), for a run whose
    environment is not restarted from seeds (the LLM family's datasets).
    """

    def __init__(
        self,
        path: str | Path,
        every: int | None = None,
        overwrite: bool = True,
        memory: Any = None,
        selection: Any = None,
        mutation: Any = None,
        extra: dict[str, Any] | None = None,
        n_step_memory: Any = None,
        env: Any = None,
    ) -> None:
        unknown = sorted(set(extra or {}) - set(EXTRA_KEYS))
        if unknown:
            raise ValueError(f"extra: {unknown} are not run checkpoint parts ({EXTRA_KEYS})")
        self.path = Path(path)
        self.every = every
        self.overwrite = overwrite
        self.memory = memory
        self.n_step_memory = n_step_memory
        self.env = env
        self.selection = selection
        self.mutation = mutation
        self.extra = extra or {}
        self.last_steps: int | None = None

    def due(self, state: RunState) -> bool:
        if self.every is None or self.last_steps is None:
            return True
        return state.steps - self.last_steps >= self.every

    def write(self, population: list[Any], state: RunState) -> Path:
        payload = {
            "kind": KIND,
            "state": state.to_dict(),
            "agents": [agent.state_dict() for agent in population],
            "elite": None if state.elite is None else state.elite.state_dict(),
            "memory": None if self.memory is None else self.memory.state_dict(),
            "selection": None if self.selection is None else self.selection.state_dict(),
            "mutation": None if self.mutation is None else self.mutation.state_dict(),
            "rng": global_rng_state(),
            **self.extra,
        }
        if self.n_step_memory is not None:
            payload["n_step_memory"] = self.n_step_memory.state_dict()
        if self.env is not None:
            payload["env"] = self.env.state_dict()
        checkpoints.save(payload, self.path)
        if not self.overwrite and self.every is not None:
            copy = self.path.with_name(f"{self.path.stem}_{state.steps}{self.path.suffix}")
            checkpoints.save(payload, copy)
        self.last_steps = state.steps
        return self.path


def load_run(path: str | Path) -> dict[str, Any]:
    """A run checkpoint's contents, its layout and progress checked (see
    :func:`agilerl.files.checkpoints.load`)."""
    data = checkpoints.load(path, kind=KIND)
    with checkpoints.restoring(path):
        checkpoints.require(data, RUN_LAYOUT)
        check_progress(data["state"])
        check_global_rng_state(data["rng"])
    return data


def check_progress(state: dict[str, Any], where: str = "state") -> None:
    """The run's progress (:class:`RunState` as saved) is one the generation loop can
    have written: counts from 0; one history record per generation, numbered in order,
    the steps never going back; the run's counts those of its last record; finite
    seconds; the best agent from a generation that ran, with a finite fitness. So a
    re-signed file cannot resume a run at a negative step or a generation of 1e15."""

    def at(*keys: Any) -> str:
        path = where
        for key in keys:
            path = checkpoints.join(path, key)
        return path

    checkpoints.require_count(state["seed"], at("seed"))
    history = state["history"]
    last = {"steps": 0, "env_steps": 0}
    for i, record in enumerate(history):
        if record["generation"] != i:
            raise checkpoints.fail(
                at("history", i, "generation"), f"{record['generation']}, expected {i}"
            )
        for key in ("steps", "env_steps"):
            checkpoints.require_count(record[key], at("history", i, key))
            if record[key] < last[key]:
                raise checkpoints.fail(
                    at("history", i, key),
                    f"{record[key]:,}, fewer than the {last[key]:,} before it",
                )
        last = record
    checkpoints.require_count(state["generation"], at("generation"))
    if state["generation"] != len(history):
        raise checkpoints.fail(
            at("generation"),
            f"{state['generation']:,}, but the history records {len(history):,} generations "
            "(every generation leaves one record)",
        )
    for key in ("steps", "env_steps"):
        checkpoints.require_count(state[key], at(key))
        if state[key] != last[key]:
            raise checkpoints.fail(
                at(key), f"{state[key]:,}, but the last generation recorded {last[key]:,}"
            )
    seconds = state["seconds"]
    checkpoints.require_finite(float(seconds), at("seconds"))
    if seconds < 0:
        raise checkpoints.fail(at("seconds"), f"{seconds} is negative")
    best = state["best"]
    if best is not None:
        checkpoints.require_finite(float(best["fitness"]), at("best", "fitness"))
        checkpoints.require_count(best["generation"], at("best", "generation"))
        if best["generation"] >= state["generation"]:
            raise checkpoints.fail(
                at("best", "generation"),
                f"{best['generation']:,}, a generation the run has not reached "
                f"({state['generation']:,} ran)",
            )


class AgentRebuilder(Protocol):
    """What :func:`restore` needs to rebuild an agent: an algorithm class, or a family's
    loader (:meth:`~agilerl.families.base.Family.agent_loader`)."""

    def from_state_dict(self, state: Any, device: Any = ..., *, where: str = ...) -> Any: ...


def restore(
    data: dict[str, Any],
    source: str | Path,
    algo_cls: AgentRebuilder,
    device: Any,
    memory: Any = None,
    selection: Any = None,
    mutation: Any = None,
    n_step_memory: Any = None,
    env: Any = None,
) -> tuple[list[Any], RunState]:
    """Rebuild the population and the run state of :func:`load_run` output, and restore
    the replay buffer (and the n-step buffer beside it), operators, the environment's
    position (``env``, where the run saves it) and global RNG states this run uses. Each
    part is checked before it is used; the global RNG states are set last, once all
    passed. ``algo_cls``: what rebuilds an agent (``from_state_dict``): the algorithm's
    class, or a family's loader (LLM agents are rebuilt on the run's shared base model)."""
    with checkpoints.restoring(source):
        population = [
            algo_cls.from_state_dict(agent, device=device, where=f"agents[{i}]")
            for i, agent in enumerate(data["agents"])
        ]
        if not population:
            raise checkpoints.fail("agents", "the checkpoint holds no agent")
        parts = (
            ("memory", memory),
            ("n_step_memory", n_step_memory),
            ("selection", selection),
            ("mutation", mutation),
            ("env", env),
        )
        for key, part in parts:
            if (part is None) != (data.get(key) is None):
                held = "holds none" if data.get(key) is None else "holds one"
                needed = "this run needs one" if part is not None else "this run has none"
                raise checkpoints.fail(key, f"the checkpoint {held}, {needed}")
            if part is not None and key == "env":  # the environment's own check
                try:
                    part.load_state_dict(data[key])
                except (KeyError, TypeError, ValueError, IndexError) as err:
                    raise checkpoints.fail(
                        key, f"not this environment's position ({err})"
                    ) from None
            elif part is not None:
                part.load_state_dict(data[key], where=key)
        state = RunState.from_dict(data["state"])
        if (data["elite"] is None) != (state.best is None):
            held = "holds no agent" if data["elite"] is None else "holds an agent"
            raise checkpoints.fail("elite", f"{held}, but state.best says otherwise")
        if data["elite"] is not None:
            state.elite = algo_cls.from_state_dict(data["elite"], device=device, where="elite")
        set_global_rng_state(data["rng"])
    return population, state


#: A run's final population (``population.pt``): every agent, as in a run checkpoint.
POPULATION_KIND = "population"
POPULATION_LAYOUT = {"kind": str, "agents": checkpoints.ListOf(dict)}


def save_population(population: list[Any], path: str | Path) -> Path:
    """Write ``population`` to one :mod:`agilerl.files.checkpoints` file, atomically."""
    agents = [agent.state_dict() for agent in population]
    return checkpoints.save({"kind": POPULATION_KIND, "agents": agents}, path)


def load_population(path: str | Path, device: Any = "cpu") -> list[Any]:
    """The agents of a ``population.pt`` of any family, each checked and rebuilt as the
    algorithm it names (one of this package's, as :meth:`EvolvableAlgorithm.load` does).
    Agents after the first are built with its runtime arguments (an LLM population
    shares one tokenizer and base model, loaded once)."""
    from agilerl.algorithms import EvolvableAlgorithm

    data = checkpoints.load(path, kind=POPULATION_KIND)
    with checkpoints.restoring(path):
        checkpoints.require(data, POPULATION_LAYOUT)
        if not data["agents"]:
            raise checkpoints.fail("agents", "the file holds no agent")
        population: list[Any] = []
        for i, agent in enumerate(data["agents"]):
            where = f"agents[{i}]"
            cls = EvolvableAlgorithm.class_of(agent, where=where)
            runtime = population[0].runtime_args() if population else {}
            population.append(cls.from_state_dict(agent, device=device, where=where, **runtime))
        return population


def _show(value: Any) -> str:
    return "not set" if value is _ABSENT else json.dumps(value)


_ABSENT = object()


def manifest_differences(saved: Any, current: Any, where: str = "") -> list[str]:
    """``path: checkpoint X, this run Y`` for every setting in which two manifest
    documents differ, except the :data:`RESUMABLE` ones."""
    if any(fnmatch.fnmatchcase(where, pattern) for pattern in RESUMABLE):
        return []
    if isinstance(saved, dict) and isinstance(current, dict):
        keys = [*saved, *(k for k in current if k not in saved)]
        return [
            line
            for key in keys
            for line in manifest_differences(
                saved.get(key, _ABSENT), current.get(key, _ABSENT), checkpoints.join(where, key)
            )
        ]
    if saved == current and type(saved) is type(current) or _numbers_equal(saved, current):
        return []
    return [f"{where}: checkpoint {_show(saved)}, this run {_show(current)}"]


def _numbers_equal(a: Any, b: Any) -> bool:
    """1 and 1.0 are the same setting; True and 1 are not."""
    numbers = (int, float)
    return (
        isinstance(a, numbers)
        and isinstance(b, numbers)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def checkpointer_for(
    checkpointer: RunCheckpointer | None,
    checkpoint: int | None,
    checkpoint_path: str | None,
    overwrite_checkpoints: bool,
    default_name: str,
    **parts: Any,
) -> RunCheckpointer | None:
    """The checkpointer a training function uses: the one given, else one built from
    the reference-style arguments (checkpoint every ``checkpoint`` steps, or every
    generation when only a path is given), else none."""
    if checkpointer is not None:
        return checkpointer
    if checkpoint is None and checkpoint_path is None:
        return None
    path = checkpoint_path or f"checkpoints/{default_name}.pt"
    return RunCheckpointer(path, every=checkpoint, overwrite=overwrite_checkpoints, **parts)
