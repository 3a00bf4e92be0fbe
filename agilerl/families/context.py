"""``RunContext``: what a family is given about the run it sets up (never the trainer)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from agilerl.families.python_env import PythonEnv


class BuildAgent(Protocol):
    """Builds one agent of the run through its spec's ``build_algorithm``:
    ``build_agent(env, index, seed)``; ``device="meta"`` builds it with shapes and no
    storage (the pre-flight sizes agents that way)."""

    def __call__(
        self, env: Any, index: int, seed: int, *, device: torch.device | None = None
    ) -> Any: ...


@dataclass(frozen=True)
class RunContext:
    """The resolved specs of a run and where it runs.

    The trainer makes one from its manifest (:attr:`LocalTrainer.context
    <agilerl.trainer.LocalTrainer.context>`) whenever a family is asked something; a
    family reads it, never changes it (:func:`dataclasses.replace` makes a variant, as
    the offline pre-flight does to size a buffer of the dataset's length).
    """

    algorithm: Any
    environment: Any
    training: Any
    network: Any = None
    mutation: Any = None
    selection_strategy: Any = None
    replay_buffer: Any = None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    accelerator: Any = None
    #: The directory relative paths of the manifest resolve against.
    base_dir: Path = field(default_factory=Path)
    #: Whether the run evolves (HPO on, mutation and selection given).
    evolving: bool = False
    build_agent: BuildAgent | None = None
    #: What a family loads once per run and reuses (an LLM run's tokenizer and base
    #: model, loaded by the pre-flight and used by the run): kept by the trainer.
    cache: dict[str, Any] = field(default_factory=dict)
    #: The environment given in Python (``LocalTrainer(env=...)``), which the family
    #: builds its environments from instead of the section's name.
    env_source: PythonEnv | None = None

    def agent(self, env: Any, index: int, seed: int, *, device: Any = None) -> Any:
        """One agent of the run (:attr:`build_agent`)."""
        if self.build_agent is None:
            raise RuntimeError("this RunContext builds no agents (no build_agent given)")
        return self.build_agent(env, index, seed, device=device)

    def cached(self, key: str, load: Callable[[], Any]) -> Any:
        """``cache[key]``, loaded by ``load()`` on first use."""
        if key not in self.cache:
            self.cache[key] = load()
        return self.cache[key]
