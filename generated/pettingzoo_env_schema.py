# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

from . import gym_env_schema
from .gym_env_schema import EnvSpec

Path = TypeAliasType(
    "Path",
    Annotated[
        str,
        Field(
            description="Directory the entry point's and wrappers' files and modules are resolved from; a relative one starts at the manifest's folder. null: the manifest's folder for a file, or for a module only that folder holds (the working directory for a spec built in Python); a run records the absolute folder it used.",
            min_length=1,
        ),
    ],
)


class PzEnvSpec(EnvSpec):
    """
    A vectorised PettingZoo parallel (multi-agent) environment: a module exposing `parallel_env`, or a custom environment built by an entry point (AgileRL's `PzEnvSpec`; `PettingZooEnvSpec` is the same class under this project's earlier name).
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    name: Annotated[
        str,
        Field(
            description='Module path exposing `parallel_env` (called with `config` as keyword arguments), or a label for the environment when `entrypoint` is given.',
            examples=['mpe2.simple_speaker_listener_v4'],
            min_length=1,
        ),
    ]
    entrypoint: Annotated[
        gym_env_schema.Entrypoint | None,
        Field(
            description='Callable building one parallel environment (called with `config` as keyword arguments) instead of `<name>.parallel_env`; null to import `name`.'
        ),
    ] = None
    path: Annotated[
        Path | None,
        Field(
            description="Directory the entry point's and wrappers' files and modules are resolved from; a relative one starts at the manifest's folder. null: the manifest's folder for a file, or for a module only that folder holds (the working directory for a spec built in Python); a run records the absolute folder it used."
        ),
    ] = None
    num_envs: Annotated[
        int,
        Field(
            description='Number of environments run in parallel (vectorised: one worker process each, or all in this process with `sync`).',
            ge=1,
        ),
    ] = 16
    sync: Annotated[
        bool,
        Field(
            description="Run every copy of the environment in this process instead of one worker process each (as the Gymnasium environment's `sync`)."
        ),
    ] = False
    config: Annotated[
        dict[str, Any] | None,
        Field(
            description='Keyword arguments for `parallel_env` or the entry point; null for none.'
        ),
    ] = None
    wrappers: Annotated[
        list[gym_env_schema.WrapperTarget | gym_env_schema.WrapperConfig] | None,
        Field(description='Wrappers applied to each environment, innermost first; null for none.'),
    ] = None
