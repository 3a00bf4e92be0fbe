"""Evolutionary hyperparameter optimisation: tournament selection and mutations."""

from agilerl.hpo.mutation import Mutations
from agilerl.hpo.tournament import TournamentSelection

__all__ = ["Mutations", "TournamentSelection"]
