"""NeuralUCB's spec, generated from ``schemas/neural_ucb.schema.json``; registered as ``NeuralUCB``."""

from agilerl._generated.neural_ucb_schema import NeuralUCBSpec
from agilerl.models.registry import register

register()(NeuralUCBSpec)

__all__ = ["NeuralUCBSpec"]
