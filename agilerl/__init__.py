"""AgileRL: deep reinforcement learning driven by JSON-Schema-first declarative specs.

Importing the package is cheap: the torch engine loads only when something is built
(``from agilerl import LocalTrainer`` loads it).
"""

from typing import Any

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "LocalTrainer":
        from agilerl.training import LocalTrainer

        return LocalTrainer
    raise AttributeError(f"module 'agilerl' has no attribute {name!r}")
