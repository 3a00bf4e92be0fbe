"""Setting up a bandit run for the trainer (the bandit row of
:mod:`agilerl.training.families`): the environment from the manifest's tables (relative
paths resolve against the manifest's directory, ``trainer.base_dir``), the agents'
construction arguments, the shared memory of pulls, the manifest the run writes and the
regret plot beside the common outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agilerl.bandits.env import BanditEnv, BanditTableError
from agilerl.bandits.memory import BanditMemory


def make_bandit_env(trainer: Any) -> BanditEnv:
    """The bandit of the environment section's tables; a bad table is a
    :class:`~agilerl.training.trainer.TrainerError` naming the file and row."""
    from agilerl.training.trainer import TrainerError

    try:
        return BanditEnv.from_spec(trainer.environment, trainer.base_dir)
    except BanditTableError as err:
        raise TrainerError(f"environment: {err}") from None


def bandit_build_args(trainer: Any, env: BanditEnv, seed: int) -> dict[str, Any]:
    """One arm's context space, the arms, the network section and the agent's seed."""
    return {
        "observation_space": env.observation_space,
        "action_space": env.action_space,
        "net_config": trainer.network,
        "seed": seed,
    }


def bandit_memory(trainer: Any) -> BanditMemory:
    """The population's shared memory of pulls (``replay_buffer.max_size`` of them)."""
    from agilerl.models.training import ReplayBufferSpec

    spec = trainer.replay_buffer or ReplayBufferSpec()
    return BanditMemory(spec.max_size, device=trainer.device)


def bandit_written_manifest(trainer: Any, doc: dict[str, Any]) -> None:
    """The tables' paths made absolute: they were relative to the original manifest."""
    for key in ("features", "targets"):
        doc["environment"][key] = str((trainer.base_dir / doc["environment"][key]).resolve())


def regret_plot(best: Any, path: Path) -> Path:
    """``regret.png``: the best agent's cumulative regret (:func:`plot_regret`)."""
    from agilerl.training.bandits import plot_regret

    return plot_regret(best, path)


def bandit_preflight(trainer: Any, available: int | None) -> Any:
    from agilerl.training.preflight import check_bandit_run

    return check_bandit_run(trainer, available)
