# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field


class TournamentSelectionSpec(SpecBase):
    """
    Tournament selection: each next-generation agent is the fittest of `tournament_size` agents drawn at random; with elitism the fittest agent always survives unchanged.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    strategy: Annotated[Literal['tournament'], Field(description='Selection strategy tag.')] = (
        'tournament'
    )
    tournament_size: Annotated[
        int, Field(description='Agents drawn into each tournament.', ge=1)
    ] = 2
    elitism: Annotated[
        bool, Field(description='Keep the fittest agent unchanged in the next generation.')
    ] = True
