"""PPO's spec, generated from ``schemas/ppo.schema.json``; registered as ``PPO``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.ppo_schema import PPOSpec
else:
    from agilerl._generated.ppo_schema import PPOSpec

register()(PPOSpec)

__all__ = ["PPOSpec"]
