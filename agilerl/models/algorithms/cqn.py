"""CQN's spec, generated from ``schemas/cqn.schema.json``; registered as ``CQN``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.cqn_schema import CQNSpec
else:
    from agilerl._generated.cqn_schema import CQNSpec

register()(CQNSpec)

__all__ = ["CQNSpec"]
