# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field, StringConstraints
from typing_extensions import TypeAliasType

RandSeed = TypeAliasType(
    "RandSeed",
    Annotated[
        int,
        Field(
            description="Seed of the mutation operator's random generator (0 to 2**32 - 1); null for an unseeded one.",
            ge=0,
            le=4294967295,
        ),
    ],
)


class MutationProbabilities(SpecBase):
    """
    Relative weights of the mutation kinds (normalised over the non-zero ones; they need not sum to 1, and at least one must be above 0). `new_layer` is conditional: the chance that an architecture mutation adds a layer or node rather than removing one.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    no_mut: Annotated[
        float, Field(description='Weight of leaving an agent unchanged.', ge=0.0, le=1.0)
    ] = 0.4
    arch_mut: Annotated[
        float, Field(description='Weight of an architecture mutation.', ge=0.0, le=1.0)
    ] = 0.2
    new_layer: Annotated[
        float,
        Field(
            description='Probability that an architecture mutation adds a layer (else it changes nodes).',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.2
    params_mut: Annotated[
        float, Field(description='Weight of a parameter (weight noise) mutation.', ge=0.0, le=1.0)
    ] = 0.2
    act_mut: Annotated[
        float, Field(description='Weight of an activation-function mutation.', ge=0.0, le=1.0)
    ] = 0.0
    rl_hp_mut: Annotated[
        float, Field(description='Weight of an RL hyperparameter mutation.', ge=0.0, le=1.0)
    ] = 0.2


class RLHyperparameter(SpecBase):
    """
    Bounds and step factors of one mutable RL hyperparameter. min must be below max.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={'x-agilerl-rules': [{'field': 'min', 'below': 'max'}]},
    )
    min: Annotated[float, Field(description='Smallest value mutation may set.')]
    max: Annotated[float, Field(description='Largest value mutation may set.')]
    grow_factor: Annotated[
        float, Field(description='Factor a growing mutation multiplies the value by.', ge=1.0)
    ] = 1.2
    shrink_factor: Annotated[
        float,
        Field(description='Factor a shrinking mutation multiplies the value by.', ge=0.0, le=1.0),
    ] = 0.8


class MutationSpec(SpecBase):
    """
    Mutation operator of evolutionary hyperparameter optimisation: which mutations happen how often, and which RL hyperparameters may change within which bounds.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    probabilities: Annotated[
        MutationProbabilities,
        Field(description='Relative weights of the mutation kinds.', validate_default=True),
    ] = {}
    rl_hp_selection: Annotated[
        dict[Annotated[str, StringConstraints(pattern=r'^[A-Za-z_][A-Za-z0-9_]*$')], RLHyperparameter],
        Field(
            description='RL hyperparameters mutation may change, by algorithm attribute name (`lr`, `batch_size`, `learn_step`, ...), with their bounds.',
            examples=[{'lr': {'min': 0.0001, 'max': 0.01}, 'batch_size': {'min': 8, 'max': 1024}}],
            validate_default=True,
        ),
    ] = {}
    mutation_sd: Annotated[
        float, Field(description='Standard deviation of parameter (weight) mutations.', ge=0.0)
    ] = 0.1
    rand_seed: Annotated[
        RandSeed | None,
        Field(
            description="Seed of the mutation operator's random generator (0 to 2**32 - 1); null for an unseeded one."
        ),
    ] = 42
