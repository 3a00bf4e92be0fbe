"""Evolutionary hyperparameter optimisation: selection strategies (tournament,
multi-frequency PBT) and mutations."""

from agilerl.hpo.multi_frequency import MultiFrequencySelection
from agilerl.hpo.mutation import Mutations
from agilerl.hpo.tournament import TournamentSelection

__all__ = ["MultiFrequencySelection", "Mutations", "TournamentSelection"]
