"""Evaluate an agent on its environment: returns over seeded episodes, and a video.

:func:`evaluate_agent` runs whole episodes of one (unvectorised) Gymnasium environment
with :meth:`RLAlgorithm.predict`, each reset with its own seed (``seed``, ``seed + 1``,
...), so the same agent, environment and seed give the same returns. Sampled actions
(``deterministic=False``) draw from generators seeded by ``seed`` too, and the agent's
own random state is left as it was.

``agilerl evaluate`` evaluates an agent of any family on the environment it was trained
on: the family of the agent's algorithm (:func:`agent_family`,
:meth:`~agilerl.families.base.Family.evaluate_saved`) decides how, or says why it cannot.

A video records the first episode from ``render_mode="rgb_array"`` frames: ``.gif``
with Pillow, ``.mp4`` with the ffmpeg binary that ``imageio-ffmpeg`` (the ``video``
extra) bundles. Frames go to the writer as they come, so an episode is never held whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agilerl.families import Family, family_for
from agilerl.families.evaluation import EvaluationError, EvaluationResult
from agilerl.families.single_agent.evaluation import (
    VIDEO_WRITERS,
    check_spaces,
    environment_spec,
    run_episodes,
)
from agilerl.models.registry import ALGO_REGISTRY


def evaluate_agent(
    agent: Any,
    environment: Any,
    episodes: int = 10,
    seed: int = 0,
    deterministic: bool = True,
    video: str | Path | None = None,
    max_episode_steps: int | None = None,
) -> EvaluationResult:
    """Run ``episodes`` whole episodes of a Gymnasium ``environment`` with
    ``agent.predict``: :func:`~agilerl.families.single_agent.evaluation.run_episodes`,
    the public name kept here (``from agilerl import evaluate_agent``)."""
    return run_episodes(agent, environment, episodes, seed, deterministic, video, max_episode_steps)


def agent_family(agent: Any) -> Family:
    """The family of a (saved) agent's algorithm, found from its spec's agent type."""
    return family_for(ALGO_REGISTRY.get(agent.name).spec_cls)


__all__ = [
    "VIDEO_WRITERS",
    "EvaluationError",
    "EvaluationResult",
    "agent_family",
    "check_spaces",
    "environment_spec",
    "evaluate_agent",
]
