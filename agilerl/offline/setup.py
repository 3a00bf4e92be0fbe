"""How the trainer sets up an offline run: the dataset (checked against the evaluation
environment before the first step), the replay buffer it fills, the written manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agilerl.offline.datasets import OfflineDataset, load_dataset


def dataset_file(trainer: Any) -> Path:
    """``environment.dataset_path``, resolved against the manifest's directory."""
    path = Path(trainer.environment.dataset_path)
    return path if path.is_absolute() else trainer.base_dir / path


def trainer_dataset(trainer: Any) -> OfflineDataset:
    """The run's dataset, checked against the spaces of one evaluation environment
    (:class:`~agilerl.offline.datasets.DatasetError` names the key and the shapes)."""
    from agilerl.training.envs import make_env

    env = make_env(trainer.environment)
    try:
        return load_dataset(
            dataset_file(trainer),
            env.observation_space,
            env.action_space,
            env_name=trainer.environment.name,
        )
    finally:
        env.close()


def offline_memory(trainer: Any) -> Any:
    """A replay buffer holding the whole dataset (filled here, once)."""
    from agilerl.components.replay_buffer import ReplayBuffer

    dataset = trainer_dataset(trainer)
    memory = ReplayBuffer(len(dataset), device=trainer.device)
    dataset.fill(memory)
    return memory


def offline_written_manifest(trainer: Any, doc: dict[str, Any]) -> None:
    """The manifest a run writes elsewhere names its dataset by an absolute path."""
    doc["environment"]["dataset_path"] = str(dataset_file(trainer).resolve())


#: Replay settings an offline run cannot honour: it samples its dataset uniformly.
UNUSED_REPLAY = {
    "per_buffer": "prioritised replay",
    "n_step_buffer": "n-step returns",
}


def check_offline_run(trainer: Any, available: int | None = None) -> Any:
    """The offline family's pre-flight, before any step: the dataset (file, keys, shapes,
    spaces of the evaluation environment), replay settings it cannot honour, the batch
    against the dataset, then the memory estimate with a buffer of the dataset's size."""
    import copy

    from agilerl.models.training import ReplayBufferSpec
    from agilerl.offline.datasets import DatasetError
    from agilerl.training.preflight import (
        PreflightError,
        available_memory,
        check_memory,
        estimate,
    )

    try:
        rows = len(trainer_dataset(trainer))
    except DatasetError as err:
        raise PreflightError(f"environment.dataset_path: {err}") from None
    buffers = trainer.replay_buffer
    for key, what in UNUSED_REPLAY.items():
        if buffers is not None and getattr(buffers, key):
            raise PreflightError(
                f"replay_buffer.{key}: {trainer.algorithm.name} learns from uniform samples "
                f"of its dataset; {what} is not available offline"
            )
    if buffers is not None and "max_size" in buffers.model_fields_set and buffers.max_size < rows:
        raise PreflightError(
            f"replay_buffer.max_size: {buffers.max_size:,} is less than the dataset's "
            f"{rows:,} transitions; an offline run holds the whole dataset (remove max_size)"
        )
    if trainer.algorithm.batch_size > rows:
        raise PreflightError(
            f"algorithm.batch_size: {trainer.algorithm.batch_size:,} is more than the "
            f"dataset's {rows:,} transitions"
        )
    sized = copy.copy(trainer)
    sized.replay_buffer = ReplayBufferSpec(max_size=rows)
    found = estimate(sized)
    check_memory(found, available_memory() if available is None else available)
    return found
