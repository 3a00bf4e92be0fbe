"""``GSPO``: Group Sequence Policy Optimisation (Zheng et al., Qwen team, 2025).

GRPO (:mod:`agilerl.algorithms.grpo`: the same rollout of ``group_size`` completions per
prompt, group-relative advantages and fields) with the importance ratio taken per
completion rather than per token: ``s = (pi(y | x) / pi_old(y | x)) ** (1 / |y|)``, the
geometric mean of its tokens' ratios, clipped to ``[1 - clip_coef, 1 + clip_coef]`` in
``-min(s A, clip(s) A)`` (plus ``beta`` times the k3 KL per token). A token-level ratio is
one noisy sample per token whose errors grow with the length; one per sequence matches
the reward, which is per sequence too. ``importance_sampling_level``: ``trajectory`` or
null (one ratio per completion or episode) or ``turn`` (one per turn of a multi-turn
episode; a single-turn completion is one turn); ``token`` is refused (it would be GRPO).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from agilerl.algorithms.grpo import GRPO

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.gspo_schema import GSPOSpec
else:
    from agilerl.models.algorithms.gspo import GSPOSpec


class GSPO(GRPO, spec=GSPOSpec):
    """GSPO (see the module docstring): GRPO with :func:`~agilerl.algorithms.llm_losses.gspo_token_loss`."""

    loss_name: ClassVar[str] = "gspo"
    is_levels: ClassVar[dict[str | None, str]] = {
        None: "sequence",
        "turn": "turn",
        "trajectory": "sequence",
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        **GRPO.learn_metrics,
        "loss": "GSPO loss minimised (sequence-level clipped surrogate plus beta times the KL)",
        "clip_fraction": "share of completion tokens whose sequence's ratio was clipped",
    }
