"""AgileRL: deep reinforcement learning driven by JSON-Schema-first declarative specs.

Importing the package is cheap: the torch engine loads only when something is built or
a name of :data:`LAZY` is first used (``from agilerl import RLAlgorithm`` loads it;
``agilerl.__version__`` reads the installed distribution's metadata).
"""

import importlib
from typing import Any

#: Public names -> the module that defines them, imported on first use.
LAZY = {
    "__version__": "agilerl.version",
    "AgentType": "agilerl.models",
    "LocalTrainer": "agilerl.trainer",
    "RLAlgorithm": "agilerl.algorithms",
    "evaluate_agent": "agilerl.evaluation",
    "train_agent": "agilerl.one_agent",
}

__all__ = [*LAZY]


def __getattr__(name: str) -> Any:
    if name not in LAZY:
        raise AttributeError(f"module 'agilerl' has no attribute {name!r}")
    return getattr(importlib.import_module(LAZY[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
