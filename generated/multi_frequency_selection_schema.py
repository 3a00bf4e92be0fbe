# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

NWinners = TypeAliasType(
    "NWinners",
    Annotated[
        int,
        Field(
            description='Agents of an evolving sub-population whose clones replace its losers; null: round(s/4), s the sub-population size.',
            ge=1,
        ),
    ],
)


NSurvivors = TypeAliasType(
    "NSurvivors",
    Annotated[int, Field(description='Agents kept as they are after the winners; null: 0.', ge=0)],
)


NOpenForMigration = TypeAliasType(
    "NOpenForMigration",
    Annotated[
        int,
        Field(
            description='Agents after the survivors, each replaced by a fitter agent of another sub-population where there is one; null: round(s/4).',
            ge=1,
        ),
    ],
)


NLosers = TypeAliasType(
    "NLosers",
    Annotated[
        int,
        Field(
            description='The least fit agents, each replaced by a mutated clone of a winner; null: the rest of the sub-population.',
            ge=1,
        ),
    ],
)


EvolutionFrequencyRatio = TypeAliasType("EvolutionFrequencyRatio", Annotated[int, Field(ge=1)])


EvolutionFrequencyRatios = TypeAliasType(
    "EvolutionFrequencyRatios",
    Annotated[
        list[EvolutionFrequencyRatio],
        Field(
            description='How many generations each sub-population waits between evolutions, one entry per sub-population, strictly increasing (the first is usually 1); null: 1, 5, 10, 15, ...',
            examples=[[1, 5]],
            min_length=1,
        ),
    ],
)


class MultiFrequencySelectionSpec(SpecBase):
    """
    Multi-frequency population-based training (MF-PBT, Doulazmi et al. 2025): the population is split into `n_subpopulations` equal sub-populations, sub-population i evolving every `evolution_frequency_ratios[i]` generations. An evolving sub-population ranks its agents into winners, survivors, agents open for migration and losers: each loser becomes a mutated clone of a winner, and each agent open for migration is replaced by a better agent of the other sub-populations (with its hyperparameters where it comes from a faster sub-population, else with the receiving sub-population's best agent's). Bracket sizes left null follow from the sub-population size s = pop_size / n_subpopulations: winners round(s/4), survivors 0, open round(s/4), losers the rest. Needs `training.pop_size` of at least 6, a multiple of `n_subpopulations`, with sub-populations of at least 3.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-rules': [{'field': 'evolution_frequency_ratios', 'within': ['n_subpopulations', 'n_subpopulations'], 'measure': 'length'}, {'field': 'evolution_frequency_ratios', 'increasing': True}]
        },
    )
    strategy: Annotated[
        Literal['multi_frequency'], Field(description='Selection strategy tag.')
    ] = 'multi_frequency'
    n_subpopulations: Annotated[
        int, Field(description='Sub-populations (at least 2: migration needs another one).', ge=2)
    ] = 2
    n_winners: Annotated[
        NWinners | None,
        Field(
            description='Agents of an evolving sub-population whose clones replace its losers; null: round(s/4), s the sub-population size.'
        ),
    ] = None
    n_survivors: Annotated[
        NSurvivors | None, Field(description='Agents kept as they are after the winners; null: 0.')
    ] = None
    n_open_for_migration: Annotated[
        NOpenForMigration | None,
        Field(
            description='Agents after the survivors, each replaced by a fitter agent of another sub-population where there is one; null: round(s/4).'
        ),
    ] = None
    n_losers: Annotated[
        NLosers | None,
        Field(
            description='The least fit agents, each replaced by a mutated clone of a winner; null: the rest of the sub-population.'
        ),
    ] = None
    evolution_frequency_ratios: Annotated[
        EvolutionFrequencyRatios | None,
        Field(
            description='How many generations each sub-population waits between evolutions, one entry per sub-population, strictly increasing (the first is usually 1); null: 1, 5, 10, 15, ...',
            examples=[[1, 5]],
        ),
    ] = None
