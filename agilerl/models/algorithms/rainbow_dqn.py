"""Rainbow DQN's spec, generated from ``schemas/rainbow_dqn.schema.json``; registered as ``RainbowDQN``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.rainbow_dqn_schema import RainbowDQNSpec
else:
    from agilerl._generated.rainbow_dqn_schema import RainbowDQNSpec

register()(RainbowDQNSpec)

__all__ = ["RainbowDQNSpec"]
