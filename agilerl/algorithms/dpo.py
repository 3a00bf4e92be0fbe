"""``DPO``: Direct Preference Optimisation of a LoRA adapter on chosen / rejected pairs.

The implicit reward of a response is ``beta * (log pi(y | x) - log pi_ref(y | x))`` (the
sequence log-probability of the response tokens under the policy against the reference
policy); the loss of a pair is ``-log sigmoid(r_chosen - r_rejected)``. Sequences longer
than ``max_model_len`` are cut to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm import LLMAlgorithm
from agilerl.llm.batches import PreferenceBatch, TokenSequences

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.dpo_schema import DPOSpec
else:
    from agilerl.models.algorithms.dpo import DPOSpec


class DPO(LLMAlgorithm, spec=DPOSpec):
    """DPO (see the module docstring). ``test`` is the held-out preference accuracy: the
    share of the test split's pairs whose implicit reward margin is positive."""

    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "mean sigmoid preference loss of the batch's pairs",
        "accuracy": "share of pairs whose chosen response has the higher implicit reward",
        "margin": "mean implicit reward margin (chosen minus rejected)",
        "chosen_reward": "mean implicit reward of the chosen responses",
        "rejected_reward": "mean implicit reward of the rejected responses",
    }
    main_loss: ClassVar[str | None] = "loss"

    lr: float  # set from the bound spec before the body runs

    def _sequence_logprobs(self, seqs: TokenSequences, *, reference: bool) -> torch.Tensor:
        """Sequence log-probabilities ``[pairs]`` of the response tokens, no gradient."""
        logp = self.logprobs(seqs.input_ids, seqs.attention_mask, reference=reference)
        return llm_losses.masked_sum(logp, seqs.loss_mask.to(logp.device).float())

    def _margins(self, batch: PreferenceBatch) -> torch.Tensor:
        chosen, rejected = self.clip_length(batch.chosen), self.clip_length(batch.rejected)
        rewards = llm_losses.dpo_margins(
            self._sequence_logprobs(chosen, reference=False),
            self._sequence_logprobs(rejected, reference=False),
            self._sequence_logprobs(chosen, reference=True),
            self._sequence_logprobs(rejected, reference=True),
            self.beta,
        )
        return rewards[0] - rewards[1]

    def learn(self, batch: PreferenceBatch) -> dict[str, float]:
        """``update_epochs`` optimiser steps on a batch of pairs; :attr:`learn_metrics`."""
        chosen, rejected = self.clip_length(batch.chosen), self.clip_length(batch.rejected)
        ref_chosen = self._sequence_logprobs(chosen, reference=True)
        ref_rejected = self._sequence_logprobs(rejected, reference=True)
        masks = [s.loss_mask.to(self.device).float() for s in (chosen, rejected)]

        def response_logprob(model: Any, seqs: TokenSequences, mask: torch.Tensor, sl: slice):
            logp = self.forward_logprobs(model, seqs.input_ids[sl], seqs.attention_mask[sl])
            return llm_losses.masked_sum(logp, mask[sl])

        def chunk_loss(model: Any, sl: slice) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            r_chosen, r_rejected = llm_losses.dpo_margins(
                response_logprob(model, chosen, masks[0], sl),
                response_logprob(model, rejected, masks[1], sl),
                ref_chosen[sl], ref_rejected[sl], self.beta,
            )  # fmt: skip
            margin = (r_chosen - r_rejected).detach()
            metrics = {
                "accuracy": (margin > 0).sum(),
                "margin": margin.sum(),
                "chosen_reward": r_chosen.detach().sum(),
                "rejected_reward": r_rejected.detach().sum(),
            }
            return llm_losses.dpo_loss(r_chosen, r_rejected).sum(), metrics

        loss, sums = self.train_step(torch.ones(len(chosen), device=self.device), chunk_loss)
        pairs = len(chosen) * self.data_parallel.world_size  # the metric sums are global
        return {"loss": loss, **{key: value / pairs for key, value in sums.items()}}

    def test(self, env: Any, loop: int = 1) -> float:
        """Held-out preference accuracy over the test split, appended to ``fitness``."""
        preferred, pairs = 0, 0
        for _ in range(loop):
            for batch in env.test_batches():
                margins = self._margins(batch)
                preferred += int((margins > 0).sum())
                pairs += len(margins)
        if not self.data_parallel.alone:  # each process judged its share of the split
            preferred, pairs = self.data_parallel.sum([preferred, pairs])
        fitness = preferred / max(pairs, 1)
        self.fitness.append(fitness)
        return fitness
