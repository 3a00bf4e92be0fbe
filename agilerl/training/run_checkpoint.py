"""Run checkpoints: a whole training run at a generation boundary, in one file.

A run checkpoint holds every agent (networks, optimisers, hyperparameters, metrics, RNG
state), the replay buffer's contents (off-policy), the selection and mutation operators'
random generators, the global torch / numpy / python RNG states, the run's progress
(:class:`~agilerl.training.evolution.RunState`) and the manifest it was started from.
It is written atomically (:mod:`agilerl.checkpoints`), so a run killed at any moment
leaves the previous checkpoint intact.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from agilerl import checkpoints

if TYPE_CHECKING:  # evolution builds checkpointers, so it imports this module
    from agilerl.training.evolution import RunState

KIND = "run"


def global_rng_state() -> dict[str, Any]:
    return {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }


def set_global_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])
    random.setstate(state["python"])


class RunCheckpointer:
    """Writes run checkpoints to ``path`` at generation boundaries.

    ``every``: env steps per agent between checkpoints (None: every generation).
    ``overwrite``: False also keeps a copy per checkpoint, ``<stem>_<steps><suffix>``,
    next to the latest one (which is always at ``path``, for resuming).
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
    ) -> None:
        self.path = Path(path)
        self.every = every
        self.overwrite = overwrite
        self.memory = memory
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
            "memory": None if self.memory is None else self.memory.state_dict(),
            "selection": None if self.selection is None else self.selection.state_dict(),
            "mutation": None if self.mutation is None else self.mutation.state_dict(),
            "rng": global_rng_state(),
            **self.extra,
        }
        checkpoints.save(payload, self.path)
        if not self.overwrite and self.every is not None:
            copy = self.path.with_name(f"{self.path.stem}_{state.steps}{self.path.suffix}")
            checkpoints.save(payload, copy)
        self.last_steps = state.steps
        return self.path


def load_run(path: str | Path) -> dict[str, Any]:
    """A run checkpoint's contents (verified; see :func:`agilerl.checkpoints.load`)."""
    return checkpoints.load(path, kind=KIND)


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
