"""MADDPG's spec, generated from ``schemas/maddpg.schema.json``; registered as ``MADDPG``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.maddpg_schema import MADDPGSpec
else:
    from agilerl._generated.maddpg_schema import MADDPGSpec

register()(MADDPGSpec)

__all__ = ["MADDPGSpec"]
