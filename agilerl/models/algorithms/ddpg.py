"""DDPG's spec, generated from ``schemas/ddpg.schema.json``; registered as ``DDPG``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.ddpg_schema import DDPGSpec
else:
    from agilerl._generated.ddpg_schema import DDPGSpec

register()(DDPGSpec)

__all__ = ["DDPGSpec"]
