"""NeuralTS's spec, generated from ``schemas/neural_ts.schema.json``; registered as ``NeuralTS``."""

from typing import TYPE_CHECKING

from agilerl.models.registry import register

if TYPE_CHECKING:  # type checkers read the generated module from the tree (pyproject package-dir)
    from generated.neural_ts_schema import NeuralTSSpec
else:
    from agilerl._generated.neural_ts_schema import NeuralTSSpec

register()(NeuralTSSpec)

__all__ = ["NeuralTSSpec"]
