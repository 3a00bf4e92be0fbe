"""NeuralTS's spec, generated from ``schemas/neural_ts.schema.json``; registered as ``NeuralTS``."""

from agilerl._generated.neural_ts_schema import NeuralTSSpec
from agilerl.models.registry import register

register()(NeuralTSSpec)

__all__ = ["NeuralTSSpec"]
