"""``SFT``: supervised fine-tuning of a LoRA adapter on prompt / response pairs.

The loss is the token cross-entropy of the response tokens only (``loss_mask``: prompt
and padding carry none), plus ``beta`` times the k3 KL to the reference policy on those
tokens (``beta`` 0 skips the reference forward). Sequences longer than ``max_model_len``
are cut to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from agilerl.algorithms import llm_losses
from agilerl.algorithms.core.llm import LLMAlgorithm
from agilerl.llm.batches import SFTBatch

if TYPE_CHECKING:  # type checkers read the generated module from the tree
    from generated.sft_schema import SFTSpec
else:
    from agilerl.models.algorithms.sft import SFTSpec


class SFT(LLMAlgorithm, spec=SFTSpec):
    """SFT (see the module docstring).

    ``test`` returns ``1 / perplexity`` of the held-out responses, ``exp(-mean token
    NLL)``: the geometric-mean probability the model gives a held-out response token, in
    (0, 1], higher is better (so tournament selection keeps the agents with the lower
    perplexity).
    """

    learn_metrics: ClassVar[Mapping[str, str]] = {
        "loss": "loss minimised: response-token cross-entropy plus beta times the KL",
        "perplexity": "perplexity of the batch's response tokens",
        "kl": "mean k3 KL to the reference policy per response token",
    }
    main_loss: ClassVar[str | None] = "loss"

    lr: float  # set from the bound spec before the body runs

    def learn(self, batch: SFTBatch) -> dict[str, float]:
        """``update_epochs`` optimiser steps on a batch; :attr:`learn_metrics`."""
        batch = self.clip_length(batch)
        ids, attention = batch.input_ids.to(self.device), batch.attention_mask.to(self.device)
        mask = batch.loss_mask.to(self.device).float()
        ref = self.logprobs(ids, attention, reference=True) if self.beta > 0 else None

        def chunk_loss(model: Any, sl: slice):
            logp = self.forward_logprobs(model, ids[sl], attention[sl])
            nll, _ = llm_losses.masked_nll(logp, mask[sl])
            metrics = {"nll": nll.detach()}
            if ref is None:
                return nll, {**metrics, "kl": nll.new_zeros(())}
            kl = (llm_losses.k3_kl(logp, ref[sl]) * mask[sl]).sum()
            return nll + self.beta * kl, {**metrics, "kl": kl.detach()}

        tokens = mask.sum(1)
        loss, sums = self.train_step(tokens, chunk_loss)
        count = max(float(self.data_parallel.sum(tokens.sum())), 1.0)  # the sums are global
        return {
            "loss": loss,
            "perplexity": math.exp(sums["nll"] / count),
            "kl": sums["kl"] / count,
        }

    def perplexity(self, env: Any) -> float:
        """Perplexity of the test split's response tokens."""
        nll, tokens = 0.0, 0.0
        for batch in env.test_batches():
            batch = self.clip_length(batch)
            logp = self.logprobs(batch.input_ids, batch.attention_mask)
            total, count = llm_losses.masked_nll(logp, batch.loss_mask.to(logp.device).float())
            nll, tokens = nll + float(total), tokens + float(count)
        if not self.data_parallel.alone:  # each process scored its share of the split
            nll, tokens = self.data_parallel.sum([nll, tokens])
        return math.exp(nll / max(tokens, 1.0))

    def test(self, env: Any, loop: int = 1) -> float:
        """``1 / perplexity`` of the test split (deterministic: ``loop`` changes nothing),
        appended to ``fitness``."""
        fitness = 1.0 / self.perplexity(env)
        self.fitness.append(fitness)
        return fitness
