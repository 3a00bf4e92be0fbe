"""``LLMPPO``: PPO with a value head for reasoning fine-tuning, AgileRL's LLM PPO.

One completion per prompt (no group), sampled as GRPO's are
(:class:`~agilerl.algorithms.core.llm_sampling.CompletionSampler`). The critic is a second
LoRA adapter on the same shared base with a linear value head on its last hidden state
(:class:`~agilerl.llm.value_head.ValueCritic`): a value per token. Each action token
carries its turn's whole reward (a single-turn completion is turn 0 and earns its
reward); the KL is not in the reward.

Advantages (``advantage_granularity``; ``auto``: ``token`` when every row of the batch
has one turn, else ``turn``): ``token``, generalised advantage estimation over each row's
action tokens (``gamma``, ``gae_lambda``); ``turn``, the same across turns with a turn's
value that of its last action token. ``whiten_advantages`` whitens them over the batch's
action tokens or played turns. The returns ``A + V_old`` are the value targets.

The loss is the clipped surrogate at the importance-sampling unit
(``importance_sampling_level``; ``auto``: the advantage's unit with ``turn_level_clip``,
else each token; a turn's log-ratios pooled per ``turn_ratio_pooling``), plus
``vf_coef`` times the clipped value loss at the advantage's unit, plus ``beta`` times the
mean k3 KL to the reference per action token. Each term is a mean over its own units
in the batch. ``lr_actor`` and ``lr_critic`` (null: ``lr_actor``) are the two
optimisers' learning rates.

Multi-turn experience (:class:`~agilerl.llm.batches.Experience` with ``turn_rewards`` and
completions with ``turn_ids``) takes the same path: the single-turn case is the one where
every row has one turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm_sampling import TurnCredit, turn_rewards_of
from agilerl.llm.batches import Experience, turn_ids_of

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.llm_ppo_schema import LLMPPOSpec
else:
    from agilerl.models.algorithms.llmppo import LLMPPOSpec


class LLMPPO(TurnCredit, spec=LLMPPOSpec):
    """LLM-PPO (see the module docstring; the advantages' unit: :class:`TurnCredit`)."""

    optimizer_specs: ClassVar[Mapping[str, tuple[tuple[str, ...], str]]] = {
        "optimizer": (("actor",), "lr_actor"),
        "critic_optimizer": (("critic",), "lr_critic"),
    }
    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "PPO loss minimised (policy + value + beta * KL terms)",
        "pg_loss": "clipped surrogate, mean over the importance-sampling units",
        "vf_loss": "vf_coef times the clipped value loss, mean over the advantage's units",
        "kl": "mean k3 KL to the reference per completion token",
        "entropy": "mean negative log-probability of the sampled completion tokens",
        "reward": "mean reward of the batch's completions",
        "clip_fraction": "share of the ratio's units that were clipped",
        "completion_length": "mean completion length in tokens",
    }
    main_loss: ClassVar[str | None] = "loss"
    critic: Any
    critic_optimizer: torch.optim.Optimizer

    # Set from the bound spec before the body runs.
    lr_actor: float
    lr_critic: float
    vf_coef: float
    clip_coef: float
    gamma: float
    gae_lambda: float
    turn_level_clip: bool
    importance_sampling_level: str
    turn_ratio_pooling: str
    whiten_advantages: bool

    def check_hyperparameters(self) -> None:
        """A null ``lr_critic`` is the actor's rate, resolved here, so a checkpoint and a
        clone hold the rate the critic's optimiser uses."""
        super().check_hyperparameters()
        if self.lr_critic is None:
            self.lr_critic = self.lr_actor

    # ``lr`` (the base's learning rate) is the actor's.
    @property
    def lr(self) -> float:
        return self.lr_actor

    @lr.setter
    def lr(self, value: float) -> None:
        self.lr_actor = value

    # -- model ----------------------------------------------------------------------------
    def _build_model(self, actor_network: Any) -> None:
        """The actor (and reference) adapters, then the critic's adapter and value head,
        seeded from ``seed`` too."""
        from agilerl.llm.adapters import LoraAdapter, peft_lora_config
        from agilerl.llm.value_head import ValueCritic

        super()._build_model(actor_network)
        base: Any = self.shared.base
        config = peft_lora_config(self.lora_config, base, self.lora_target_scope)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed + 1)
            adapter = LoraAdapter(
                self.shared, f"critic_agent{self.index}", self.lora_config, config
            )
            hidden = base.get_input_embeddings().embedding_dim
            self.critic = ValueCritic(adapter, hidden, self.device)

    def _network_attrs(self) -> list[str]:
        return [*super()._network_attrs(), "critic"]

    @contextlib.contextmanager
    def _critic(self, *, train: bool = False) -> Iterator[Any]:
        """The base model's body (no language-model head) with the critic's adapter
        active. peft freezes every adapter but the active one, and a leaf frozen before
        the backward pass drops the gradient its forward recorded, so on leaving, the
        actor's and the critic's adapters both keep their gradient."""
        base: Any = self.shared.base
        with self.shared.active(self.critic.name) as model:
            model.train(train)
            try:
                yield base.base_model
            finally:
                for param in (*self.actor.parameters(), *self.critic.adapter.parameters()):
                    param.requires_grad_(True)

    def forward_values(
        self, ids: torch.Tensor, attention_mask: torch.Tensor, *, train: bool = False
    ) -> torch.Tensor:
        """The critic's value of each prediction's state ``[rows, T - 1]`` (the value
        before token ``j + 1`` is chosen)."""
        with self._critic(train=train) as body:
            hidden = body(
                input_ids=ids,
                attention_mask=attention_mask,
                position_ids=self._position_ids(attention_mask),
                use_cache=False,
            ).last_hidden_state
        return self.critic.values(hidden[:, :-1])

    def values(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """:meth:`forward_values` without a gradient, ``fused_logprobs_chunk_rows`` rows at
        a time (one with ``reduce_memory_peak``)."""
        return self.without_grad(self.forward_values, ids, attention_mask)

    # -- learning -------------------------------------------------------------------------
    def ratio_level(self, granularity: str) -> str:
        """The importance ratio's unit: the field; ``auto``, the advantages' unit with
        ``turn_level_clip``, else each token."""
        if self.importance_sampling_level != "auto":
            return self.importance_sampling_level
        return granularity if self.turn_level_clip else "token"

    def learn(self, experience: Experience) -> dict[str, float]:
        """``update_epochs`` steps of both optimisers on the completions and their
        rewards (``turn_rewards`` when multi-turn); returns :attr:`learn_metrics`."""
        c = experience.completions
        dp = self.data_parallel
        rewards = experience.rewards.to(self.device).float().reshape(-1)
        turn_rewards = turn_rewards_of(experience).to(self.device).float()
        max_turns = turn_rewards.shape[1]
        mask = c.loss_mask.to(self.device).float()
        turn_ids = turn_ids_of(c).to(self.device).long()
        ids, attention = c.ids.to(self.device), c.attention_mask.to(self.device)
        old = self.logprobs(ids, attention)
        ref = self.logprobs(ids, attention, reference=True) if self.beta > 0 else None
        old_values = self.values(ids, attention)
        _, played = llm_losses.turn_values(old_values, turn_ids, max_turns)
        granularity = self.granularity(played.sum(1))
        level = self.ratio_level(granularity)
        # Advantages and value targets at the granularity's unit (tokens or turns).
        # GAE over a row's tokens, or over its turns, is the same recursion on its units.
        unit_old = llm_losses.VALUE_UNITS[granularity](old_values, turn_ids, max_turns)
        step_rewards, units = llm_losses.STEP_REWARDS[granularity](
            turn_rewards, turn_ids, mask, played
        )
        adv, returns = llm_losses.token_gae(
            step_rewards, unit_old, units, self.gamma, self.gae_lambda
        )
        if self.whiten_advantages:  # over the global batch's units (moments summed)
            moments = dp.sum(llm_losses.return_moments(adv, units))
            adv = llm_losses.rebn(adv, units, moments)
        token_adv = llm_losses.TO_TOKENS[granularity](adv, turn_ids)

        # The reported means are the global batch's: sums over every rank's rows.
        tokens, logp_sum, reward_sum, rows, value_units = (float(v) for v in dp.sum(torch.stack([
            mask.sum(), (old * mask).sum(), rewards.sum(),
            torch.tensor(float(len(rewards)), device=self.device), units.sum(),
        ])))  # fmt: skip
        metrics = {
            "reward": reward_sum / max(rows, 1.0),
            "completion_length": tokens / max(rows, 1.0),
            "entropy": -logp_sum / max(tokens, 1.0),
        }
        _, row_units, _ = llm_losses.ppo_policy_loss(
            old, old, token_adv, mask, turn_ids, max_turns,
            clip_coef=self.clip_coef, level=level, pooling=self.turn_ratio_pooling,
        )  # fmt: skip
        count = float(dp.sum(row_units.sum()))
        if not count > 0:  # no completion token anywhere: nothing to learn from
            return {"loss": 0.0, "pg_loss": 0.0, "vf_loss": 0.0, "kl": 0.0,
                    "clip_fraction": 0.0, **metrics}  # fmt: skip
        # train_step divides the chunks' sum by the policy units: the value and KL sums
        # are rescaled so that each term is the mean over its own units.
        vf_scale, kl_scale = count / max(value_units, 1.0), count / max(tokens, 1.0)

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            pg, _, clipped = llm_losses.ppo_policy_loss(
                logp, old[sl], token_adv[sl], mask[sl], turn_ids[sl], max_turns,
                clip_coef=self.clip_coef, level=level, pooling=self.turn_ratio_pooling,
            )  # fmt: skip
            values = self.forward_values(ids[sl], attention[sl], train=True)
            unit_values = llm_losses.VALUE_UNITS[granularity](values, turn_ids[sl], max_turns)
            vf = llm_losses.clipped_value_loss(
                unit_values, unit_old[sl], returns[sl], units[sl],
                clip_coef=self.clip_coef, vf_coef=self.vf_coef,
            )  # fmt: skip
            kl = (
                torch.zeros_like(pg)
                if ref is None
                else (llm_losses.k3_kl(logp, ref[sl]) * mask[sl]).sum(1)
            )
            loss = pg.sum() + vf_scale * vf.sum() + kl_scale * self.beta * kl.sum()
            return loss, {
                "pg": pg.sum().detach(),
                "vf": vf.sum().detach(),
                "kl": kl.sum().detach(),
                "clipped": clipped.sum().detach(),
            }

        loss, totals = self.train_step(row_units, chunk_loss)
        return {
            "loss": loss,
            "pg_loss": totals["pg"] / count,
            "vf_loss": totals["vf"] / max(value_units, 1.0),
            "kl": totals["kl"] / max(tokens, 1.0),
            "clip_fraction": totals["clipped"] / count,
            **metrics,
        }
