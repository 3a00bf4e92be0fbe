"""Sampling completions so that each one depends on its own row alone.

transformers' sampling draws every row of a batch from one generator, so a completion
depends on which other rows share its batch: the completions of a batch split over
processes (:mod:`agilerl.llm.data_parallel`) would not be the ones one process samples
for the whole batch. :class:`RowSampler` gives every row its own generator, seeded from
the agent's draw for the batch and the row's position in the global batch, and samples
by the Gumbel-max trick: ``argmax(scores / T + G)``, with ``G`` independent standard
Gumbel noise per token, is an exact draw from ``softmax(scores / T)``. Generation runs
greedy (``do_sample=False``) with this processor last, after transformers' own
(``min_new_tokens`` masks the end-of-sequence token with -inf, which stays -inf).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from transformers import LogitsProcessor


def row_seed(draw: int, row: int) -> int:
    """The seed of row ``row``'s stream for the batch the agent drew ``draw`` for."""
    state = np.random.SeedSequence([draw, row]).generate_state(2, np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


class RowSampler(LogitsProcessor):
    """Scores that greedy decoding turns into a sample at ``temperature`` per row, row
    ``i`` of the batch drawing from the stream of global row ``rows[i]``."""

    def __init__(self, draw: int, rows: Iterable[int], temperature: float) -> None:
        self.seeds = [row_seed(draw, row) for row in rows]
        self.temperature = float(temperature)
        self.generators: list[torch.Generator] | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if len(scores) != len(self.seeds):
            raise ValueError(f"{len(scores)} rows to sample for {len(self.seeds)} row streams")
        if self.generators is None:  # created on the device the scores are on
            self.generators = [
                torch.Generator(scores.device).manual_seed(seed) for seed in self.seeds
            ]
        noise = torch.stack(
            [
                torch.empty(scores.shape[1], device=scores.device).exponential_(generator=gen)
                for gen in self.generators
            ]
        )
        # -log(E), E ~ Exp(1), is standard Gumbel noise.
        return scores.float() / self.temperature - noise.log()
