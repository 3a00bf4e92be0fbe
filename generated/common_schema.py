# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import SpecBase
from pydantic import Field
from typing_extensions import TypeAliasType

Common = TypeAliasType(
    "Common",
    Annotated[
        Any,
        Field(
            description='Shared vocabulary referenced by the spec schemas. Defines no document of its own.',
            title='Common',
        ),
    ],
)
