"""Errors of the run side that name the manifest section at fault."""

from __future__ import annotations


class TrainerError(ValueError):
    """A run that cannot be set up as specified; the message names the section."""


class DivergedError(TrainerError):
    """A run stopped because an agent's learn metrics, fitness or weights became NaN or
    infinite: nothing of the generation that diverged was recorded, selected or
    checkpointed. The message names the generation, the agent and the figure."""

    def __init__(self, message: str, generation: int, index: int, figure: str) -> None:
        super().__init__(message)
        self.generation, self.index, self.figure = generation, index, figure
