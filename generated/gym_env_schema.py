# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Any, Literal

from agilerl.models.base import SpecBase
from agilerl.models.env_base import EnvSpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

Entrypoint = TypeAliasType(
    "Entrypoint",
    Annotated[
        str,
        Field(
            description="A callable as `module:callable` (a dotted module) or `path/file.py:callable` (a file, resolved from `path`, by default the manifest's folder).",
            examples=['my_envs.grid:make_grid_env', 'envs/grid.py:GridEnv'],
            pattern='^[^:]+:[A-Za-z_][A-Za-z0-9_]*$',
            title='Entrypoint',
        ),
    ],
)


WrapperTarget = TypeAliasType(
    "WrapperTarget",
    Annotated[
        str,
        Field(
            description='A wrapper class or factory: a dotted import path (`gymnasium.wrappers.RecordEpisodeStatistics`) or an entry point (`module:Class`, `path/file.py:Class`).',
            examples=['gymnasium.wrappers.RecordEpisodeStatistics', 'my_wrappers:ClipReward'],
            pattern='^([^:]+:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+)$',
            title='WrapperTarget',
        ),
    ],
)


class WrapperConfig(SpecBase):
    """
    A wrapper with keyword arguments.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    wrapper: Annotated[
        str,
        Field(
            description='The wrapper class or factory.',
            examples=['gymnasium.wrappers.RecordEpisodeStatistics', 'my_wrappers:ClipReward'],
            pattern='^([^:]+:[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)+)$',
            title='WrapperTarget',
        ),
    ]
    kwargs: Annotated[
        dict[str, Any],
        Field(description='Keyword arguments the wrapper is called with (after the environment).'),
    ] = {}


class AtariPreprocessing(SpecBase):
    """
    The usual preprocessing of an Arcade Learning Environment game (DQN's Nature setup, as Stable-Baselines3's AtariWrapper and CleanRL apply it): Gymnasium's AtariPreprocessing (no-op starts, frame skipping with a max over the last two frames, resizing, grey scale), then a lost life ending the learning episode, FIRE after each reset, rewards clipped to [-1, 1], and the last frames stacked. The game must be made without its own frame skipping: for a registered id the engine passes `frameskip=1` to `gymnasium.make`.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    frame_skip: Annotated[
        int,
        Field(
            description='Frames each action is repeated for (the observation is the max of the last two).',
            ge=1,
        ),
    ] = 4
    screen_size: Annotated[
        int, Field(description='Side of the square the frames are resized to.', ge=1)
    ] = 84
    grayscale: Annotated[
        bool,
        Field(
            description='Grey-scale frames (one channel); false keeps RGB, which the CNN encoder cannot take stacked.'
        ),
    ] = True
    noop_max: Annotated[
        int,
        Field(
            description='At most this many no-op actions after a reset (a random number of them), so episodes start in different states; 0 for none.',
            ge=0,
        ),
    ] = 30
    episodic_life: Annotated[
        bool,
        Field(
            description='A lost life ends the episode for learning (terminated), and the next reset continues the game instead of restarting it; the training episode returns the loop reports are then per life. Evaluation (fitness, agilerl evaluate) plays whole games.'
        ),
    ] = True
    fire_reset: Annotated[
        bool,
        Field(
            description='Press FIRE after every reset, and after a lost life that does not end the episode (games that wait for it, such as Breakout); ignored by games without a FIRE action.'
        ),
    ] = True
    clip_reward: Annotated[
        bool,
        Field(
            description="Clip each reward to [-1, 1] (its sign, for the integer rewards of Atari games) for learning; the training episode returns the loop reports are then of clipped rewards. Evaluation (fitness, agilerl evaluate) scores the game's own rewards."
        ),
    ] = True
    frame_stack: Annotated[
        int,
        Field(
            description='The last frames stacked on a new leading axis, so an observation is (frame_stack, screen_size, screen_size) uint8; 1 for a single frame (still with that axis).',
            ge=1,
        ),
    ] = 4


class EnvSpec(EnvSpecBase):
    """
    Fields of every vectorised environment specification (AgileRL's `EnvSpec`): its name and how many copies run. Not a document of its own: GymEnvSpec, OfflineEnvSpec and PzEnvSpec build on it.
    """

    name: Annotated[str, Field(description="The environment's id or label.", min_length=1)]
    num_envs: Annotated[
        int, Field(description='Number of environments run in parallel (vectorised).', ge=1)
    ] = 16


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


class GymEnvFields(EnvSpec):
    """
    Fields of a Gymnasium environment specification. Not a document of its own: each environment spec closes it.
    """

    name: Annotated[
        str,
        Field(
            description='A registered Gymnasium id (`CartPole-v1`), or a label for the environment when `entrypoint` is given.',
            examples=['LunarLander-v3'],
            min_length=1,
        ),
    ]
    entrypoint: Annotated[
        Entrypoint | None,
        Field(
            description='Callable building one environment (called with `config` as keyword arguments) instead of `gymnasium.make(name)`; null to use the registry.'
        ),
    ] = None
    path: Annotated[
        Path | None,
        Field(
            description="Directory the entry point's and wrappers' files and modules are resolved from; a relative one starts at the manifest's folder. null: the manifest's folder for a file, or for a module only that folder holds (the working directory for a spec built in Python); a run records the absolute folder it used."
        ),
    ] = None
    num_envs: Annotated[
        int, Field(description='Number of environments run in parallel (vectorised).', ge=1)
    ] = 16
    config: Annotated[
        dict[str, Any] | None,
        Field(
            description='Keyword arguments for `gymnasium.make` or the entry point; null for none.'
        ),
    ] = None
    atari: Annotated[
        AtariPreprocessing | None,
        Field(
            description='Atari preprocessing and frame stacking (ALE games, the atari extra), applied before `wrappers`; null for none.',
            examples=[{'frame_stack': 4}],
        ),
    ] = None
    wrappers: Annotated[
        list[WrapperTarget | WrapperConfig] | None,
        Field(
            description='Wrappers applied to each environment (after `atari`, when given), innermost first; null for none.'
        ),
    ] = None
    sync: Annotated[
        bool,
        Field(
            description='Vectorise with SyncVectorEnv (one process) instead of AsyncVectorEnv (one process per environment).'
        ),
    ] = False
    vectorize: Annotated[
        Literal['native', 'sync', 'async'] | None,
        Field(
            description='How the `num_envs` copies run: `native` (one environment that steps every copy at once, where Gymnasium registers a vector entry point for the id, as for CartPole-v1), `sync` (SyncVectorEnv: every copy in this process), `async` (AsyncVectorEnv: one worker process per copy). null: `native` where the environment has it, else as `sync` says.'
        ),
    ] = None


class GymEnvSpec(GymEnvFields):
    """
    A vectorised Gymnasium environment: a registered id, or a custom environment built by an entry point. A pure description; building the environment happens elsewhere.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
