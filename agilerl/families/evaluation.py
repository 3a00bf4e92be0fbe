"""What evaluating an agent gives: :class:`EvaluationResult` (returns and lengths per
episode) and :class:`EvaluationError` (an evaluation that cannot run as asked).

Every family's :meth:`~agilerl.families.base.Family.evaluate_saved` returns the one and
raises the other; :mod:`agilerl.evaluation` re-exports both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


class EvaluationError(ValueError):
    """An evaluation that cannot run as asked; the message says which part and why."""


@dataclass(frozen=True)
class EvaluationResult:
    """What an evaluation measured: per episode, its return and length (a multi-agent
    team's return sums every agent's rewards; a bandit's "episode" is a round of pulls,
    its return the round's reward rate)."""

    returns: list[float]
    lengths: list[int]
    seed: int
    deterministic: bool
    environment: str
    video: Path | None = None
    frames: int = 0  # frames recorded (the reset and one per step)

    @property
    def mean_return(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std_return(self) -> float:
        return float(np.std(self.returns))

    @property
    def mean_length(self) -> float:
        return float(np.mean(self.lengths))

    @property
    def std_length(self) -> float:
        return float(np.std(self.lengths))

    def to_json(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "episodes": len(self.returns),
            "seed": self.seed,
            "deterministic": self.deterministic,
            "mean_return": self.mean_return,
            "std_return": self.std_return,
            "mean_length": self.mean_length,
            "std_length": self.std_length,
            "returns": list(self.returns),
            "lengths": list(self.lengths),
            "video": None if self.video is None else str(self.video),
            "video_frames": self.frames,
        }

    def summary(self) -> str:
        actions = "deterministic" if self.deterministic else "sampled"
        lines = [
            f"{self.environment}: {len(self.returns)} episodes, seeds {self.seed}.."
            f"{self.seed + len(self.returns) - 1}, {actions} actions",
            f"  return  {self.mean_return:.2f} +/- {self.std_return:.2f} "
            f"(min {min(self.returns):.2f}, max {max(self.returns):.2f})",
            f"  length  {self.mean_length:.1f} +/- {self.std_length:.1f}",
        ]
        if self.video is not None:
            lines.append(f"  video   {self.video} ({self.frames} frames, first episode)")
        return "\n".join(lines)


def check_counts(episodes: Any, max_episode_steps: Any) -> None:
    """``episodes`` and ``max_episode_steps`` (None: no cut) are positive numbers."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise EvaluationError(f"episodes: expected a positive number, got {episodes!r}")
    if max_episode_steps is not None and max_episode_steps < 1:
        raise EvaluationError(
            f"max_episode_steps: expected a positive number, got {max_episode_steps!r}"
        )


def no_video(video: Any, what: str) -> None:
    """Refuse a video where the family records none (``what``: the environment kind)."""
    if video is not None:
        raise EvaluationError(
            f"video: {what} records no video; leave --video out (videos are of Gymnasium "
            "environments)"
        )
