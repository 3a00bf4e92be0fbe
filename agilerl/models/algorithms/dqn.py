"""DQN's spec, generated from ``schemas/dqn.schema.json``; registered as ``DQN``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.dqn_schema import DQNSpec
else:
    from agilerl._generated.dqn_schema import DQNSpec

register()(DQNSpec)

__all__ = ["DQNSpec"]
