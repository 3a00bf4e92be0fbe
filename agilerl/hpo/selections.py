"""The selection strategies, by the ``strategy`` tag of their spec: one table, read by the
trainer (which builds the operator) and by the pre-run checks (which ask it what a
population cannot do with its spec)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agilerl.hpo.multi_frequency import MultiFrequencySelection
from agilerl.hpo.tournament import TournamentSelection

if TYPE_CHECKING:  # types only
    from agilerl.models import MultiFrequencySelectionSpec, TournamentSelectionSpec

    SelectionSpec = TournamentSelectionSpec | MultiFrequencySelectionSpec

#: ``selection_strategy.strategy`` -> the operator class (``from_spec``, ``problems``).
SELECTIONS: dict[str, type[TournamentSelection] | type[MultiFrequencySelection]] = {
    "tournament": TournamentSelection,
    "multi_frequency": MultiFrequencySelection,
}


def selection_class(
    spec: SelectionSpec,
) -> type[TournamentSelection] | type[MultiFrequencySelection]:
    """The operator class of a selection spec."""
    return SELECTIONS[spec.strategy]
