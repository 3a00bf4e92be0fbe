"""NeuralUCB's spec, generated from ``schemas/neural_ucb.schema.json``; registered as ``NeuralUCB``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.neural_ucb_schema import NeuralUCBSpec
else:
    from agilerl._generated.neural_ucb_schema import NeuralUCBSpec

register()(NeuralUCBSpec)

__all__ = ["NeuralUCBSpec"]
