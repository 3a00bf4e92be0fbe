# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from agilerl.models.replay_base import ReplayBufferBase
from pydantic import ConfigDict, Field


class NStepBufferArgs(SpecBase):
    """
    Settings of an n-step return buffer.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    n_step: Annotated[int, Field(description='Steps summed into each return.', ge=1)] = 3


class PerBufferArgs(SpecBase):
    """
    Settings of a prioritised experience replay buffer.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    alpha: Annotated[
        float,
        Field(
            description='Prioritisation exponent: 0 samples uniformly, 1 fully by priority.',
            ge=0.0,
            le=1.0,
        ),
    ] = 0.5


class ReplayBufferSpec(ReplayBufferBase):
    """
    Experience replay memory of off-policy, offline and bandit algorithms: plain, n-step, prioritised (PER), or PER with a secondary n-step buffer.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={'x-agilerl-renamed': {'memory_size': 'max_size'}},
    )
    max_size: Annotated[
        int,
        Field(
            description="Capacity of the buffer in transitions, at most a billion; whether it fits this machine's memory is checked before a run starts.",
            ge=1,
            le=1000000000,
        ),
    ] = 100000
    storage: Annotated[
        Literal['transitions', 'frames'],
        Field(
            description='How the uniform buffer holds observations: `transitions` (every field of every transition as given) or `frames` (stacked-frame observations, as `environment.atari` gives: each frame is stored once and the stacks of `obs` and `next_obs` are rebuilt when sampled; samples are the same as with `transitions`). Not with `per_buffer`.'
        ),
    ] = 'transitions'
    standard_buffer: Annotated[
        bool,
        Field(
            description='Accepted for AgileRL manifests and never read: the main buffer is uniform unless `per_buffer` is set.'
        ),
    ] = True
    n_step_buffer: Annotated[bool, Field(description='Use an n-step return buffer.')] = False
    n_step_buffer_args: Annotated[NStepBufferArgs, Field(description='Settings of the n-step buffer.', validate_default=True)] = {
        'n_step': 3
    }
    per_buffer: Annotated[
        bool, Field(description='Use prioritised experience replay (Rainbow DQN only).')
    ] = False
    per_buffer_args: Annotated[PerBufferArgs, Field(description='Settings of the prioritised buffer.', validate_default=True)] = {
        'alpha': 0.5
    }
