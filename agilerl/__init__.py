"""AgileRL: deep reinforcement learning driven by JSON-Schema-first declarative specs.

Importing the package is cheap: the torch engine loads only when something is built or
a name of :data:`LAZY` is first used (``from agilerl import RLAlgorithm`` loads it).
"""

import importlib
from typing import Any

__version__ = "0.1.0"

#: Public names of the engine -> the module that defines them, imported on first use.
LAZY = {
    "LocalTrainer": "agilerl.trainer",
    "RLAlgorithm": "agilerl.algorithms",
    "evaluate_agent": "agilerl.evaluation",
    "train_agent": "agilerl.one_agent",
}

__all__ = ["__version__", *LAZY]


def __getattr__(name: str) -> Any:
    if name not in LAZY:
        raise AttributeError(f"module 'agilerl' has no attribute {name!r}")
    return getattr(importlib.import_module(LAZY[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
