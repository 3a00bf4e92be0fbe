"""The offline family (CQN): agents learn from a local dataset (an HDF5 file or a Minari
dataset in the local Minari data directory, checked against the evaluation environment
before the first step) held whole in a replay buffer, and are evaluated on Gymnasium
vector environments (:mod:`.loop`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gymnasium import spaces

from agilerl.components.replay_buffer import ReplayBuffer
from agilerl.families.base import Family, Memory, evolved_mlp_network
from agilerl.families.context import RunContext
from agilerl.families.offline import loop
from agilerl.families.offline.datasets import DatasetError, OfflineDataset, load_dataset
from agilerl.families.offline.minari_datasets import load_minari_dataset
from agilerl.families.single_agent.envs import make_env, make_vector_env
from agilerl.families.single_agent.evaluation import GymEvaluation, without_dataset
from agilerl.families.single_agent.family import gym_build_args, gym_env_workers
from agilerl.families.single_agent.preflight import estimate
from agilerl.models.base import AgentType
from agilerl.models.env import OFFLINE_SOURCES, remote_dataset
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.evolution import Turns
from agilerl.training.preflight import Estimate, PreflightError, check_fits

#: Replay settings an offline run cannot honour: it samples its dataset uniformly.
UNUSED_REPLAY = {
    "per_buffer": "prioritised replay",
    "n_step_buffer": "n-step returns",
}


def dataset_file(ctx: RunContext) -> Path:
    """``environment.dataset_path``, resolved against the manifest's directory."""
    path = Path(ctx.environment.dataset_path)
    return path if path.is_absolute() else ctx.base_dir / path


#: ``load(ctx, observation_space, action_space, env_name)``: a source's checked dataset.
Loader = Callable[[RunContext, spaces.Space, spaces.Space, str], OfflineDataset]

#: How each source of transitions is read, by the environment field that names it.
LOADERS: dict[str, Loader] = {
    "dataset_path": lambda ctx, *against: load_dataset(dataset_file(ctx), *against),
    "minari_dataset_id": lambda ctx, *against: load_minari_dataset(
        ctx.environment.minari_dataset_id, *against
    ),
}


def dataset_source(environment: Any) -> str:
    """The field naming the section's dataset (the schema lets exactly one be given)."""
    given = [key for key in OFFLINE_SOURCES if getattr(environment, key) is not None]
    if len(given) != 1:
        raise PreflightError(
            f"environment: exactly one of {', '.join(OFFLINE_SOURCES)} names the dataset, "
            f"given: {', '.join(given) or 'none'}"
        )
    return given[0]


def run_dataset(ctx: RunContext) -> OfflineDataset:
    """The run's dataset, from its source, checked against the spaces of one evaluation
    environment (:class:`~agilerl.families.offline.datasets.DatasetError` names the key
    and the shapes)."""
    load = LOADERS[dataset_source(ctx.environment)]
    env = make_env(ctx.environment)
    try:
        return load(ctx, env.observation_space, env.action_space, ctx.environment.name)
    finally:
        env.close()


def check_offline_run(ctx: RunContext, available: int | None = None) -> Estimate:
    """The offline family's pre-flight, before any step: the dataset (file, keys, shapes,
    spaces of the evaluation environment), replay settings it cannot honour, the batch
    against the dataset, then the memory estimate with a buffer of the dataset's size.
    ``remote: true`` is refused first: nothing is downloaded."""
    refusal = remote_dataset(ctx.environment)
    if refusal is not None:
        raise PreflightError(refusal)
    source = dataset_source(ctx.environment)
    try:
        rows = len(run_dataset(ctx))
    except DatasetError as err:
        raise PreflightError(f"environment.{source}: {err}") from None
    buffers = ctx.replay_buffer
    for key, what in UNUSED_REPLAY.items():
        if buffers is not None and getattr(buffers, key):
            raise PreflightError(
                f"replay_buffer.{key}: {ctx.algorithm.name} learns from uniform samples "
                f"of its dataset; {what} is not available offline"
            )
    if buffers is not None and "max_size" in buffers.model_fields_set and buffers.max_size < rows:
        raise PreflightError(
            f"replay_buffer.max_size: {buffers.max_size:,} is less than the dataset's "
            f"{rows:,} transitions; an offline run holds the whole dataset (remove max_size)"
        )
    if ctx.algorithm.batch_size > rows:
        raise PreflightError(
            f"algorithm.batch_size: {ctx.algorithm.batch_size:,} is more than the "
            f"dataset's {rows:,} transitions"
        )
    sized = dataclasses.replace(ctx, replay_buffer=ReplayBufferSpec(max_size=rows))
    return check_fits(
        estimate(sized, loop.offline_cohorting(ctx.training.cohorts, ReplayBuffer)), available
    )


class OfflineFamily(GymEvaluation, Family):
    agent_type = AgentType.OfflineAgent
    title = "offline"
    step_unit = "learning updates"

    def evaluation_environment(self, environment: Any, agent: Any) -> Any:
        """The Gymnasium part of the recorded section: its dataset_path dropped."""
        return super().evaluation_environment(without_dataset(environment), agent)

    def make_env(self, ctx: RunContext) -> Any:
        """The evaluation environment; the transitions come from the dataset file."""
        return make_vector_env(ctx.environment)

    def build_args(self, ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
        return gym_build_args(ctx, env, seed)

    def turns(self, ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
        return loop.run_turns(ctx, env, memory, population)

    def preflight(self, ctx: RunContext, available: int | None) -> Estimate:
        return check_offline_run(ctx, available)

    def make_memory(self, ctx: RunContext) -> Memory:
        """A replay buffer holding the whole dataset (filled here, once)."""
        dataset = run_dataset(ctx)
        memory = ReplayBuffer(len(dataset), device=ctx.device)
        dataset.fill(memory)
        return Memory(memory)

    def replay_memory(self, spec: Any, algorithm: Any, device: Any) -> Memory:
        """An empty buffer of ``max_size`` transitions for a dataset to fill (a run sizes
        its own by the dataset instead)."""
        return Memory(ReplayBuffer(spec.max_size, device=device))

    def env_workers(self, ctx: RunContext, env: Any) -> int:
        return gym_env_workers(ctx, env)

    def evolved_network(self, best: Any) -> dict[str, Any]:
        return evolved_mlp_network(best)

    def written_manifest(self, ctx: RunContext, doc: dict[str, Any]) -> None:
        """The manifest a run writes elsewhere names a dataset file by an absolute path
        (a Minari id is the same from anywhere)."""
        if ctx.environment.dataset_path is not None:
            doc["environment"]["dataset_path"] = str(dataset_file(ctx).resolve())
