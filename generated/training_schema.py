# @generated from schemas/ by `nox -s codegen` (datamodel-code-generator). Never edit by hand.

from __future__ import annotations

from typing import Annotated, Literal

from agilerl.models.base import SpecBase
from pydantic import ConfigDict, Field
from typing_extensions import TypeAliasType

EvoSteps = TypeAliasType(
    "EvoSteps",
    Annotated[
        int,
        Field(
            description="Steps between evolutions (evaluation, selection, mutation); null for the algorithm's default.",
            ge=1,
        ),
    ],
)


EvalSteps = TypeAliasType(
    "EvalSteps",
    Annotated[
        int,
        Field(
            description='Steps per evaluation episode; null to run each evaluation episode to its end, cut at 100,000 steps if it has not ended by then (the run warns once: an environment whose episodes never end).',
            ge=1,
        ),
    ],
)


EpsStart = TypeAliasType(
    "EpsStart",
    Annotated[
        float,
        Field(
            description="Initial epsilon of epsilon-greedy exploration (off-policy); null for the loop's default (1.0).",
            ge=0.0,
            le=1.0,
        ),
    ],
)


EpsEnd = TypeAliasType(
    "EpsEnd",
    Annotated[
        float,
        Field(
            description="Final epsilon (off-policy); null for the loop's default (0.01).",
            ge=0.0,
            le=1.0,
        ),
    ],
)


EpsDecay = TypeAliasType(
    "EpsDecay",
    Annotated[
        float,
        Field(
            description="Multiplicative epsilon decay per vector step (off-policy); null for the loop's default (0.999).",
            gt=0.0,
            le=1.0,
        ),
    ],
)


CheckpointSteps = TypeAliasType(
    "CheckpointSteps",
    Annotated[
        int,
        Field(
            description='Steps per agent between checkpoints, written at the first generation boundary after each interval; null to checkpoint every generation (when a checkpoint path is set).',
            ge=1,
        ),
    ],
)


CheckpointPath = TypeAliasType(
    "CheckpointPath",
    Annotated[
        str,
        Field(
            description='File the latest run checkpoint is written to (atomically); null for no checkpoints unless checkpoint_steps is set (`agilerl train` always checkpoints into its output directory).',
            min_length=1,
        ),
    ],
)


NumEpochs = TypeAliasType(
    "NumEpochs",
    Annotated[
        int,
        Field(
            description='Passes over the training dataset (LLM); null to train for max_steps.', ge=1
        ),
    ],
)


MaxWallSeconds = TypeAliasType(
    "MaxWallSeconds",
    Annotated[
        float,
        Field(
            description='Stop after this much wall-clock time in seconds; null for no limit.',
            gt=0.0,
        ),
    ],
)


Seed = TypeAliasType(
    "Seed",
    Annotated[
        int,
        Field(
            description='Seed of the run (initial weights, environment resets, exploration, selection), 0 to 2**32 - 1 (what every random generator of the run and every JSON reader holds exactly); null to draw one, which the trainer records in the manifest it writes.',
            ge=0,
            le=4294967295,
        ),
    ],
)


TensorboardLogDir = TypeAliasType(
    "TensorboardLogDir",
    Annotated[
        str,
        Field(
            description="Directory TensorBoard event files are written to after every generation (`tensorboard --logdir` it): per agent its fitness, training score, the algorithm's losses, mutable hyperparameters, mutation and env steps/s; null for no TensorBoard logging. Give each run its own directory: a resumed run continues the files there. Needs `pip install 'agilespec[tensorboard]'`.",
            examples=['runs/tensorboard/ppo_cartpole'],
            min_length=1,
        ),
    ],
)


Entity = TypeAliasType(
    "Entity",
    Annotated[
        str,
        Field(
            description='W&B user or team owning the project; null for your default entity.',
            min_length=1,
        ),
    ],
)


class WandbConfig(SpecBase):
    """
    Where a run's metrics go in Weights & Biases.
    """

    model_config = ConfigDict(
        extra='forbid',
    )
    project: Annotated[
        str,
        Field(description='W&B project the run is logged to.', examples=['cartpole'], min_length=1),
    ]
    entity: Annotated[
        Entity | None,
        Field(description='W&B user or team owning the project; null for your default entity.'),
    ] = None
    mode: Annotated[
        Literal['online', 'offline', 'disabled'] | None,
        Field(
            description="online: sync to the W&B server as the run goes; offline: write the run to local files only (`wandb sync` uploads them later); disabled: log nothing; null to follow the WANDB_MODE environment variable (W&B's default: online)."
        ),
    ] = None


class TrainingSpec(SpecBase):
    """
    How long and how a population is trained, evaluated and checkpointed. Fields a training loop does not use (e.g. eps_* for on-policy algorithms) are ignored by it.
    """

    model_config = ConfigDict(
        extra='forbid',
        json_schema_extra={
            'x-agilerl-renamed': {'population_size': 'pop_size', 'metrics_interval': 'evo_steps'},
            'x-agilerl-rules': [{'field': 'evo_steps', 'atMost': 'max_steps'}, {'field': 'eps_end', 'atMost': 'eps_start'}],
        },
    )
    max_steps: Annotated[
        int, Field(description='Total environment steps to train for (per agent).', ge=1)
    ] = 1000000
    evo_steps: Annotated[
        EvoSteps | None,
        Field(
            description="Steps between evolutions (evaluation, selection, mutation); null for the algorithm's default."
        ),
    ] = None
    pop_size: Annotated[int, Field(description='Number of agents in the population.', ge=1)] = 1
    eval_steps: Annotated[
        EvalSteps | None,
        Field(
            description='Steps per evaluation episode; null to run each evaluation episode to its end, cut at 100,000 steps if it has not ended by then (the run warns once: an environment whose episodes never end).'
        ),
    ] = None
    eval_loop: Annotated[
        int,
        Field(
            description='Evaluation rounds per agent and generation; each round runs one episode in every sub-environment and the fitness is the mean return.',
            ge=1,
        ),
    ] = 1
    target_score: Annotated[
        float | None,
        Field(
            description="Stop after the generation in which the best agent's evaluation score reaches this; null to train for max_steps."
        ),
    ] = None
    learning_delay: Annotated[
        int, Field(description='Steps collected before learning starts (off-policy).', ge=0)
    ] = 0
    warmup_actions: Annotated[
        Literal['policy', 'uniform'],
        Field(
            description="How an off-policy agent acts before its learning starts (while the replay buffer holds no more than learning_delay steps, or less than a batch): policy, its own exploration (the actor plus noise, epsilon-greedy); uniform, actions drawn uniformly from the action space (among the allowed ones) by the agent's own generator, as Stable-Baselines3 and CleanRL do before learning_starts. Read by single-agent off-policy runs (DQN, RainbowDQN, DDPG, TD3); multi-agent, bandit and LLM runs refuse uniform; on-policy and offline runs, which have no warm-up, ignore it as they ignore learning_delay."
        ),
    ] = 'policy'
    eps_start: Annotated[
        EpsStart | None,
        Field(
            description="Initial epsilon of epsilon-greedy exploration (off-policy); null for the loop's default (1.0)."
        ),
    ] = None
    eps_end: Annotated[
        EpsEnd | None,
        Field(description="Final epsilon (off-policy); null for the loop's default (0.01)."),
    ] = None
    eps_decay: Annotated[
        EpsDecay | None,
        Field(
            description="Multiplicative epsilon decay per vector step (off-policy); null for the loop's default (0.999)."
        ),
    ] = None
    checkpoint_steps: Annotated[
        CheckpointSteps | None,
        Field(
            description='Steps per agent between checkpoints, written at the first generation boundary after each interval; null to checkpoint every generation (when a checkpoint path is set).'
        ),
    ] = None
    checkpoint_path: Annotated[
        CheckpointPath | None,
        Field(
            description='File the latest run checkpoint is written to (atomically); null for no checkpoints unless checkpoint_steps is set (`agilerl train` always checkpoints into its output directory).'
        ),
    ] = None
    overwrite_checkpoints: Annotated[
        bool,
        Field(
            description='Overwrite the previous checkpoint instead of keeping one per checkpoint step.'
        ),
    ] = False
    evaluation_interval: Annotated[
        int, Field(description='Training iterations between evaluations (LLM).', ge=1)
    ] = 10
    num_epochs: Annotated[
        NumEpochs | None,
        Field(description='Passes over the training dataset (LLM); null to train for max_steps.'),
    ] = None
    max_wall_seconds: Annotated[
        MaxWallSeconds | None,
        Field(description='Stop after this much wall-clock time in seconds; null for no limit.'),
    ] = None
    episode_steps: Annotated[
        int, Field(description='Steps per training episode (bandits).', ge=1)
    ] = 500
    sum_scores: Annotated[
        bool,
        Field(
            description="Sum the agents' scores into one team score instead of scoring each agent (multi-agent)."
        ),
    ] = True
    seed: Annotated[
        Seed | None,
        Field(
            description='Seed of the run (initial weights, environment resets, exploration, selection), 0 to 2**32 - 1 (what every random generator of the run and every JSON reader holds exactly); null to draw one, which the trainer records in the manifest it writes.'
        ),
    ] = None
    hpo: Annotated[
        bool,
        Field(
            description='Evolve the population (tournament selection and mutation); false trains every agent without evolution.'
        ),
    ] = True
    cohorts: Annotated[
        bool,
        Field(
            description='Train the agents whose networks share an architecture as one cohort: parameters stacked along a population dimension, one batched forward, loss and optimiser step for all of them, their environments stepped together. Algorithms that cannot train in cohorts train one agent at a time. false: every agent trains in turn.'
        ),
    ] = True
    tensorboard_log_dir: Annotated[
        TensorboardLogDir | None,
        Field(
            description="Directory TensorBoard event files are written to after every generation (`tensorboard --logdir` it): per agent its fitness, training score, the algorithm's losses, mutable hyperparameters, mutation and env steps/s; null for no TensorBoard logging. Give each run its own directory: a resumed run continues the files there. Needs `pip install 'agilespec[tensorboard]'`.",
            examples=['runs/tensorboard/ppo_cartpole'],
        ),
    ] = None
    wandb: Annotated[
        WandbConfig | None,
        Field(
            description="Log the same per-generation metrics to a Weights & Biases run (the manifest is its config); null for no W&B logging. Needs `pip install 'agilespec[wandb]'`.",
            examples=[{'project': 'cartpole'}, {'project': 'cartpole', 'entity': 'my-team', 'mode': 'offline'}],
        ),
    ] = None
