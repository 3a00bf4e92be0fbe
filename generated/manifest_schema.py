# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.manifest_base import ManifestBase
from agilerl.models.sections import AlgorithmValue, EncoderValue, EnvironmentValue, NetworkValue
from pydantic import ConfigDict, Field

from . import (
    multi_frequency_selection_schema,
    mutation_schema,
    replay_buffer_schema,
    tournament_selection_schema,
    training_schema,
)
from .network_schema import NetworkCommonFields


class NetworkSection(NetworkCommonFields):
    """
    Network of an RL algorithm: encoder (`encoder_config`, its `arch` given here, inside it, or inferred) and MLP head.
    """

    model_config = ConfigDict(
        extra='forbid',
        arbitrary_types_allowed=True,
    )
    arch: Annotated[
        Literal['mlp', 'cnn', 'lstm', 'multiinput', 'simba'] | None,
        Field(
            description='Encoder architecture; may be given here instead of inside `encoder_config`.'
        ),
    ] = None
    encoder_config: Annotated[
        EncoderValue | None,
        Field(
            description='Encoder specification: a complete config of the encoder `arch` selects (given here, inside it, or inferred).'
        ),
    ] = None
    squash_output: Annotated[
        bool, Field(description='Stochastic actors only: squash continuous actions with tanh.')
    ] = False


class TrainingManifest(ManifestBase):
    """
    A whole training run: the algorithm (selected by `name`), its environment, network, training budget, evolutionary HPO and replay buffer. Put `# yaml-language-server: $schema=<path or URL of this file>` on the first line of a manifest for editor completion.
    """

    model_config = ConfigDict(
        extra='forbid',
        arbitrary_types_allowed=True,
        json_schema_extra={
            'x-agilerl-renamed': {'tournament_selection': 'selection_strategy'},
            'x-agilerl-rules': [{'field': 'algorithm', 'key': 'num_envs', 'sameAs': 'environment'}],
        },
    )
    version: Annotated[Literal[1], Field(description='Manifest format version.')] = 1
    algorithm: Annotated[
        AlgorithmValue,
        Field(description='The algorithm and its hyperparameters, selected by `name`.'),
    ]
    environment: Annotated[
        EnvironmentValue,
        Field(
            description='The environment; its schema follows from the algorithm (Gymnasium, PettingZoo, offline dataset, bandit dataset or LLM dataset).'
        ),
    ]
    network: Annotated[
        NetworkValue,
        Field(
            description='The network: `arch` at the top, `arch` inside `encoder_config`, or no `arch` (inferred from the observation space when the run is built). LLM algorithms take a pretrained model here.'
        ),
    ] = None
    training: Annotated[
        training_schema.TrainingSpec | None,
        Field(
            description='Training budget, evaluation and checkpoints. Omitted, it is `TrainingSpec()` (every default); an explicit null is accepted and also runs with the defaults.',
            validate_default=True,
        ),
    ] = {}
    mutation: Annotated[
        mutation_schema.MutationSpec | None,
        Field(
            description='Mutation probabilities and hyperparameter ranges of evolutionary HPO; null for none.'
        ),
    ] = None
    replay_buffer: Annotated[
        replay_buffer_schema.ReplayBufferSpec | None,
        Field(
            description='Replay memory of off-policy, offline and bandit algorithms; null for the defaults.'
        ),
    ] = None
    selection_strategy: Annotated[
        tournament_selection_schema.TournamentSelectionSpec | multi_frequency_selection_schema.MultiFrequencySelectionSpec | None,
        Field(
            description='How the next generation is selected: tournament selection (`strategy: tournament`, the default) or multi-frequency PBT (`strategy: multi_frequency`); null for none.'
        ),
    ] = None
