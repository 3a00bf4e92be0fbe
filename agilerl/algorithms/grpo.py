"""``GRPO``: Group Relative Policy Optimisation of a LoRA adapter on a reasoning task.

Each prompt gets ``group_size`` completions sampled at ``temperature`` (between
``min_output_tokens`` and ``max_output_tokens`` new tokens, within ``max_model_len``);
their rewards, relative to the group's (``adv_norm``), are the advantages. The loss per
completion token is the clipped surrogate ``-min(r A, clip(r, 1 - clip_coef, 1 + clip_coef)
A)`` plus ``beta`` times the k3 estimate of the KL divergence to the reference policy, with
``r = pi / pi_old`` the importance ratio against the policy that sampled (its
log-probabilities recomputed before the first of ``update_epochs`` steps).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm_sampling import CompletionSampler, choice, turn_rewards_of
from agilerl.algorithms.hyperparameters import unit_interval
from agilerl.llm.batches import Experience, turn_ids_of

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.grpo_schema import GRPOSpec
else:
    from agilerl.models.algorithms.grpo import GRPOSpec

#: ``importance_sampling_level`` -> the ratio's level: per token, per turn (one
#: length-normalised ratio per turn of a multi-turn episode; a single-turn completion is
#: one turn) or per trajectory (one per episode or completion).
IS_LEVELS = {None: "token", "token": "token", "turn": "turn", "trajectory": "sequence"}

#: ``advantage_granularity`` -> the advantages' unit. ``auto`` is the trajectory's
#: (AgileRL's default); single-turn completions give the same advantages either way.
GRANULARITIES = {"auto": "trajectory", "trajectory": "trajectory", "turn": "turn"}


class GRPO(CompletionSampler, spec=GRPOSpec):
    """GRPO (see the module docstring).

    Advantages: per group, ``adv_norm`` ``mean_std`` ``(r - mean) / (std + 1e-8)`` (sample
    std), ``mean`` ``r - mean``, ``none`` ``r``; then ``whiten_advantages`` standardises
    them over the batch, ``adv_clip_range`` clips them and ``filter_zero_adv`` drops
    completions whose advantage is zero (a group that all scored alike) from the loss.
    ``importance_sampling_level`` ``token`` (and null) takes one ratio per token,
    ``turn`` one per turn of a multi-turn episode (per completion when single-turn),
    ``trajectory`` one per episode or completion.

    Multi-turn episodes (:mod:`agilerl.families.llm.multiturn`): ``advantage_granularity``
    ``trajectory`` (and ``auto``) gives every action token of an episode its episode
    return's group-relative advantage; ``turn`` gives turn ``k``'s tokens turn ``k``'s
    reward relative to the turn-``k`` rewards of the group members that played turn ``k``
    (:func:`~agilerl.algorithms.llm_losses.turn_group_advantages`); a turn fewer than two
    members played takes the trajectory advantage when
    ``turn_advantage_trajectory_fallback``, else 0. Single-turn completions get the same
    advantages either way.
    ``loss_norm``: ``micro_batch`` normalises each row chunk (``fused_loss_chunk_rows``) by
    its own completion tokens and averages the chunks; ``accumulation_window`` divides the
    whole step's token sum by its token count.

    GSPO and CISPO are this class with another :attr:`loss_name` (and, for GSPO, other
    :attr:`is_levels`): the rollout, the advantages and the optimisation are the same.
    """

    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "GRPO loss minimised (clipped surrogate plus beta times the KL)",
        "kl": "mean k3 KL to the reference policy per completion token",
        "reward": "mean reward of the batch's completions",
        "clip_fraction": "share of completion tokens whose ratio was clipped",
        "completion_length": "mean completion length in tokens",
    }
    main_loss: ClassVar[str | None] = "loss"
    #: The loss, by its name in :data:`~agilerl.algorithms.llm_losses.GROUP_LOSSES`.
    loss_name: ClassVar[str] = "grpo"
    #: ``importance_sampling_level`` values accepted -> the ratio's level.
    is_levels: ClassVar[dict[str | None, str]] = IS_LEVELS

    # Set from the bound spec before the body runs.
    group_size: int
    lr: float
    clip_coef: Any
    adv_norm: str
    importance_sampling_level: str | None
    advantage_granularity: str
    whiten_advantages: bool
    adv_clip_range: float | None
    filter_zero_adv: bool
    turn_advantage_trajectory_fallback: bool
    loss_norm: str  # type: ignore[assignment]  # the base's class default, a field here

    def check_hyperparameters(self) -> None:
        """The clip as this loss reads it (:meth:`_clip_coef`), the importance-sampling
        levels this loss has (:attr:`is_levels`)."""
        super().check_hyperparameters()
        self.clip_coef = self._clip_coef(self.clip_coef)
        self.importance_sampling_level = choice(
            "importance_sampling_level", self.importance_sampling_level, self.is_levels
        )

    @staticmethod
    def _clip_coef(clip_coef: Any) -> Any:
        """GRPO's and GSPO's clip: a coefficient in [0, 1] (CISPO's may be a pair)."""
        return unit_interval("clip_coef", clip_coef)

    @property
    def samples_per_prompt(self) -> int:
        """The group: ``group_size`` completions of each prompt."""
        return self.group_size

    # -- learning -------------------------------------------------------------------------
    def advantages(self, rewards: torch.Tensor) -> torch.Tensor:
        """Advantages ``[B * G]`` of rewards ``[B, G]`` (see the class docstring)."""
        return llm_losses.group_advantages(
            rewards, self.adv_norm, whiten=self.whiten_advantages, clip_range=self.adv_clip_range
        )

    def turn_advantages(
        self, rewards: torch.Tensor, turn_rewards: torch.Tensor, played: torch.Tensor
    ) -> torch.Tensor:
        """Advantages ``[B * G, K]`` of each turn of each episode (zero on turns not
        played) from the episode returns ``[B, G]`` and the turn rewards ``[B * G, K]``
        at ``advantage_granularity`` (see the class docstring)."""
        unit = UNIT_ADVANTAGES[GRANULARITIES[self.advantage_granularity]]
        return unit(self, rewards, turn_rewards, played)

    def learn(self, experience: Experience) -> dict[str, float]:
        """``update_epochs`` optimiser steps on the completions and their rewards; returns
        :attr:`learn_metrics` (no step when ``filter_zero_adv`` leaves no completion)."""
        c = experience.completions
        dp = self.data_parallel
        rewards = experience.rewards.to(self.device).float()
        turn_ids = turn_ids_of(c).to(self.device)
        turn_rewards = turn_rewards_of(experience).to(self.device).float()
        played = llm_losses.turns_played(turn_ids, turn_rewards.shape[1])
        # Data-parallel: the advantages (whitening included) and the reported means are
        # the global batch's; this rank keeps its own rows' advantages.
        everyone = dp.gather(rewards)
        mine = dp.share(len(everyone) * self.group_size, "rows")
        turn_adv = self.turn_advantages(
            everyone, dp.gather(turn_rewards), dp.gather(played.float()).bool()
        )[mine]
        adv = llm_losses.on_turn_tokens(turn_adv, turn_ids)
        mask = c.loss_mask.to(self.device).float()
        if self.filter_zero_adv:
            mask = mask * (adv != 0).float()
        lengths = dp.gather(c.loss_mask.to(self.device).sum(1).float())
        metrics = {
            "reward": float(everyone.mean()),
            "completion_length": float(lengths.mean()),
        }
        tokens = mask.sum(1)
        count = float(dp.sum(tokens.sum()))
        if not count > 0:
            return {"loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, **metrics}
        ids, attention = c.ids.to(self.device), c.attention_mask.to(self.device)
        old = self.logprobs(ids, attention)
        ref = self.logprobs(ids, attention, reference=True) if self.beta > 0 else None
        level = self.is_levels[self.importance_sampling_level]
        token_loss = llm_losses.GROUP_LOSSES[self.loss_name]

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            loss, kl, clipped = token_loss(
                logp, old[sl], None if ref is None else ref[sl], adv[sl], mask[sl],
                clip_coef=self.clip_coef, beta=self.beta, level=level, turn_ids=turn_ids[sl],
            )  # fmt: skip
            return loss.sum(), {"kl": kl.sum().detach(), "clipped": clipped.sum()}

        loss, sums = self.train_step(tokens, chunk_loss)
        count = max(count, 1.0)
        return {
            "loss": loss,
            "kl": sums["kl"] / count,
            "clip_fraction": sums["clipped"] / count,
            **metrics,
        }


def _by_trajectory(
    agent: GRPO, rewards: torch.Tensor, turn_rewards: torch.Tensor, played: torch.Tensor
) -> torch.Tensor:
    """Every turn of an episode takes the episode return's advantage."""
    return agent.advantages(rewards)[:, None] * played


def _by_turn(
    agent: GRPO, rewards: torch.Tensor, turn_rewards: torch.Tensor, played: torch.Tensor
) -> torch.Tensor:
    """Each turn's reward relative to the group members' rewards of the same turn."""
    fallback = (
        llm_losses.group_advantages(rewards, agent.adv_norm)
        if agent.turn_advantage_trajectory_fallback
        else None
    )
    adv = llm_losses.turn_group_advantages(
        turn_rewards, played, agent.group_size, agent.adv_norm, fallback=fallback
    )
    return llm_losses.whiten_and_clip(
        adv, played, whiten=agent.whiten_advantages, clip_range=agent.adv_clip_range
    )


#: The advantages' unit -> the advantages ``[B * G, K]`` of each turn of each episode.
UNIT_ADVANTAGES = {"trajectory": _by_trajectory, "turn": _by_turn}
