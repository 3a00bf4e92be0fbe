"""``agilerl dataset collect``: record transitions of a Gymnasium environment (a random
policy or a trained agent) in an HDF5 dataset for the offline family."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agilerl.cli.common import (
    CliError,
    command_threads,
    positive,
    subcommand,
    threads_option,
)
from agilerl.cli.overrides import load_with_overrides
from agilerl.guards.manifest_code import anchored
from agilerl.guards.user_code import UserCodeError
from agilerl.models.env import GymEnvSpec


def _collection_environment(source: str) -> Any:
    """The environment ``agilerl dataset collect`` records: a manifest's (an offline one
    names the evaluation environment beside its dataset) or a Gymnasium id."""
    if Path(source).suffix in (".yaml", ".yml"):
        environment = load_with_overrides(source, []).environment
        if not hasattr(environment, "num_envs"):
            raise CliError(
                f"{source}: environment: datasets are recorded from Gymnasium environments, "
                f"not a {type(environment).__name__}"
            )

        return anchored(environment, Path(source).parent)  # its code beside it, as in training
    try:  # one environment in this process: consecutive rows are consecutive steps
        return GymEnvSpec(name=source, num_envs=1, sync=True)
    except ValidationError as err:
        raise CliError(f"{source}: {err.errors()[0]['msg']}") from None


def _collection_policy(path: str) -> Any:
    """The single-agent agent saved at ``path``, acting in the collected environment."""
    from agilerl.algorithms import RLAlgorithm
    from agilerl.algorithms.core.evolvable import EvolvableAlgorithm

    agent = EvolvableAlgorithm.load(path)
    if not isinstance(agent, RLAlgorithm):
        raise CliError(
            f"--policy {path}: a {agent.name} agent acts in no single Gymnasium environment; "
            "dataset collect needs a single-agent policy (DQN, PPO, ...) or random"
        )
    return agent


def run(args: argparse.Namespace) -> int:
    import torch

    from agilerl.families.environments import EnvironmentSpecError
    from agilerl.families.offline.collect import collect_transitions, write_dataset
    from agilerl.families.offline.datasets import DatasetError
    from agilerl.families.single_agent.envs import make_vector_env
    from agilerl.files.checkpoints import CheckpointError

    try:
        if args.policy == "random" and args.epsilon is not None:
            raise CliError("--epsilon: the random policy acts at random at every step already")
        if not Path(args.output).parent.is_dir():  # before the collection, not after it
            raise CliError(f"-o {args.output}: no such directory {Path(args.output).parent}")
        environment = _collection_environment(args.source)
        agent = None if args.policy == "random" else _collection_policy(args.policy)
        env = make_vector_env(environment)
        try:
            # Shapes and actions must agree; observation bounds may differ (an agent
            # built for an unbounded Box acts on a bounded one alike).
            if agent is not None and (
                agent.observation_space.shape != env.single_observation_space.shape
                or agent.action_space != env.single_action_space
            ):
                raise CliError(
                    f"{args.policy}: the agent acts on observations of shape "
                    f"{agent.observation_space.shape} with {agent.action_space}; "
                    f"{environment.name} has {env.single_observation_space.shape} and "
                    f"{env.single_action_space}"
                )
            device = torch.device(agent.device if agent is not None else "cpu")
            with command_threads(args.threads, agent, device):
                data, returns = collect_transitions(
                    env, args.steps, agent, epsilon=args.epsilon or 0.0, seed=args.seed
                )
        finally:
            env.close()
        path = write_dataset(args.output, data)
    except (CliError, CheckpointError, DatasetError, EnvironmentSpecError, UserCodeError) as err:
        print(f"agilerl: {err}", file=sys.stderr)
        return 1
    except OSError as err:
        print(f"agilerl: {args.output}: cannot write ({err.strerror or err})", file=sys.stderr)
        return 1
    policy = "random policy" if agent is None else f"{args.policy}, epsilon {args.epsilon or 0}"
    mean = f", mean return {sum(returns) / len(returns):.1f}" if returns else ""
    print(
        f"wrote {path}: {len(data['rewards']):,} transitions of {environment.name} "
        f"({policy}); {len(returns):,} episodes ended{mean}"
    )
    return 0


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number in [0, 1]")
    return value


def add_parser(commands: Any) -> None:
    """The ``dataset`` command and its ``collect`` subcommand."""
    collect = subcommand(
        commands,
        "dataset",
        "offline datasets (HDF5) for CQN",
        "collect",
        "record transitions of a Gymnasium environment (random or a trained agent) in "
        "an HDF5 dataset",
    )
    collect.add_argument(
        "source",
        metavar="MANIFEST_OR_ENV",
        help="a manifest (its environment section) or a Gymnasium id, e.g. CartPole-v1",
    )
    collect.add_argument("-o", "--output", required=True, metavar="FILE", help="e.g. data.h5")
    collect.add_argument(
        "--steps", type=positive, required=True, metavar="N", help="transitions to record"
    )
    collect.add_argument(
        "--policy",
        default="random",
        metavar="random|AGENT",
        help="random (default), or an agent file (e.g. runs/dqn/best_agent.pt) acting greedily",
    )
    collect.add_argument(
        "--epsilon",
        type=_fraction,
        metavar="E",
        help="with an agent: the share of random actions (default 0)",
    )
    collect.add_argument(
        "--seed", type=int, default=0, metavar="S", help="reset and action seed (default 0)"
    )
    threads_option(collect)
    collect.set_defaults(handler=run)
