"""Evolutionary hyperparameter optimisation specifications: mutation and selection.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from agilerl._generated.mutation_schema import (
    MutationProbabilities,
    MutationSpec,
    RLHyperparameter,
)
from agilerl._generated.tournament_selection_schema import TournamentSelectionSpec

__all__ = [
    "MutationProbabilities",
    "MutationSpec",
    "RLHyperparameter",
    "TournamentSelectionSpec",
]
