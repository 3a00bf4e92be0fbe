"""Evolutionary hyperparameter optimisation specifications: mutation and selection.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home.
"""

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.multi_frequency_selection_schema import MultiFrequencySelectionSpec
    from generated.mutation_schema import (
        MutationProbabilities,
        MutationSpec,
        RLHyperparameter,
    )
    from generated.tournament_selection_schema import TournamentSelectionSpec
else:
    from agilerl._generated.multi_frequency_selection_schema import MultiFrequencySelectionSpec
    from agilerl._generated.mutation_schema import (
        MutationProbabilities,
        MutationSpec,
        RLHyperparameter,
    )
    from agilerl._generated.tournament_selection_schema import TournamentSelectionSpec

#: ``selection_strategy.strategy`` -> its spec class (a section without the tag is
#: tournament selection, the tag's default).
SELECTION_SPECS: dict[str, type] = {
    "tournament": TournamentSelectionSpec,
    "multi_frequency": MultiFrequencySelectionSpec,
}

#: A ``selection_strategy`` section as one type (AgileRL's name): the spec its
#: ``strategy`` tag names, e.g. ``TypeAdapter(SelectionStrategySpec).validate_python(d)``.
#: The union is the schema's ``oneOf``; a manifest resolves its section by the same tag.
SelectionStrategySpec = Annotated[
    TournamentSelectionSpec | MultiFrequencySelectionSpec,
    Field(discriminator="strategy"),
]

__all__ = [
    "SELECTION_SPECS",
    "SelectionStrategySpec",
    "MultiFrequencySelectionSpec",
    "MutationProbabilities",
    "MutationSpec",
    "RLHyperparameter",
    "TournamentSelectionSpec",
]
