"""``CISPO``: Clipped Importance-Sampling-weight Policy Optimisation (MiniMax-M1, 2025).

GRPO's rollout, group-relative advantages and fields (:mod:`agilerl.algorithms.grpo`), with
a REINFORCE-style token loss ``-sg(clip(r, low, high)) A log pi`` (plus ``beta`` times
the k3 KL): the importance ratio, clipped and without a gradient, only weighs each
token's log-probability. PPO's clip zeroes the gradient of a token whose ratio left the
range, often a rare "fork" token ("However", "Wait"); clipping the weight keeps it.

``clip_coef``: a number ``e`` clips the weight to ``[1 - e, 1 + e]``; a pair ``[low,
high]`` gives the bounds themselves (``[0.8, 2.0]``: ``e_low`` 0.2, ``e_high`` 1.0; the
paper tunes the upper bound only). ``importance_sampling_level`` as GRPO's (default: per
token). The paper uses ``beta`` 0; the KL term is kept for the fields' sake.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from agilerl.algorithms.grpo import GRPO
from agilerl.algorithms.hyperparameters import non_negative
from agilerl.algorithms.llm_losses import clip_bounds

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.cispo_schema import CISPOSpec
else:
    from agilerl.models.algorithms.cispo import CISPOSpec


class CISPO(GRPO, spec=CISPOSpec):
    """CISPO (see the module docstring): GRPO with :func:`~agilerl.algorithms.llm_losses.cispo_token_loss`."""

    loss_name: ClassVar[str] = "cispo"
    learn_metrics: ClassVar[Mapping[str, str]] = {
        **GRPO.learn_metrics,
        "loss": "CISPO loss minimised (clipped-weight REINFORCE term plus beta times the KL)",
        "clip_fraction": "share of completion tokens whose importance weight was clipped",
    }

    @staticmethod
    def _clip_coef(clip_coef: Any) -> Any:
        """A coefficient ``e >= 0`` or a pair ``[low, high]`` of non-negative bounds."""
        if isinstance(clip_coef, (int, float)):
            return non_negative("clip_coef", clip_coef)
        pair = list(clip_coef) if isinstance(clip_coef, (list, tuple)) else None
        if pair is None or len(pair) != 2:
            raise ValueError(f"clip_coef must be a number or a pair [low, high], got {clip_coef!r}")
        low, high = (non_negative("clip_coef", v) for v in pair)
        clip_bounds([low, high])  # low <= high, or a ValueError naming clip_coef
        return [low, high]
