"""The batches LLM environments hand to LLM algorithms, and what the algorithms hand back.

One convention holds throughout: a sequence of ``T`` token ids ``ids[:, :T]`` gives ``T - 1``
next-token predictions (``logits[:, :-1]`` predict ``ids[:, 1:]``), so every *loss mask* has
shape ``[rows, T - 1]`` and marks the predictions that count (response tokens; never prompt
or padding). Prompts are left-padded so that generation continues every row at the same
column; responses and completions are right-padded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass
class PromptBatch:
    """Tokenised prompts of a reasoning environment.

    ``input_ids`` / ``attention_mask``: ``[B, P]``, left-padded. ``texts``: the rendered
    prompts. ``rows``: the dataset rows the prompts came from (the environment keeps
    them to score completions; an agent has no use for them, and a test split's answers
    never reach a training reward because training batches only ever come from the train
    split). ``first_row``: the position of the first prompt in the global batch when the
    batch is this process's share of it (:mod:`agilerl.llm.data_parallel`); completions
    are sampled from streams keyed by their global row.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    texts: list[str]
    rows: list[dict[str, Any]]
    first_row: int = 0

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


@dataclass
class Completions:
    """``group_size`` sampled completions per prompt of a :class:`PromptBatch`.

    Row ``b * group_size + g`` is completion ``g`` of prompt ``b``. ``ids`` /
    ``attention_mask``: ``[B * G, P + C]``, the (left-padded) prompt followed by the
    (right-padded) completion. ``loss_mask``: ``[B * G, P + C - 1]``, True where the
    prediction is a completion token (padding after an end-of-sequence token excluded).
    ``texts``: the decoded completions. ``sampling_logprobs``: ``[B * G, P + C - 1]``
    log-probabilities of the taken tokens under the policy that sampled them (zero
    outside ``loss_mask``), or None when not recorded. ``turn_ids``: ``[rows, P + C - 1]``,
    the turn (0, 1, ...) each action prediction of a multi-turn episode belongs to, -1 off
    the actions; None for single-turn completions, whose every completion token is turn 0
    (:func:`turn_ids_of` gives that tensor).
    """

    ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    prompt_length: int
    group_size: int
    texts: list[str]
    sampling_logprobs: torch.Tensor | None = None
    turn_ids: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])


def turn_ids_of(completions: Completions) -> torch.Tensor:
    """The completions' turn of each prediction ``[rows, T - 1]``: their own ``turn_ids``,
    or, for single-turn completions, 0 on every completion token and -1 elsewhere."""
    if completions.turn_ids is not None:
        return completions.turn_ids
    return torch.where(completions.loss_mask.bool(), 0, -1)


@dataclass
class Experience:
    """What the sampling algorithms learn from: completions and their rewards ``[B, G]``
    (one per completion; a multi-turn episode's return, the sum of its turns' rewards),
    and, for multi-turn episodes, each turn's reward ``turn_rewards`` ``[B * G,
    max_turns]`` (zero after an episode's last turn; None for single-turn completions,
    whose one turn earns the completion's reward)."""

    completions: Completions
    rewards: torch.Tensor
    turn_rewards: torch.Tensor | None = None


@dataclass
class TokenSequences:
    """Prompt + response sequences: ``input_ids`` / ``attention_mask`` ``[B, T]``
    (right-padded), ``loss_mask`` ``[B, T - 1]`` True on response-token predictions."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])


@dataclass
class PreferenceBatch:
    """Preference pairs (DPO): the same prompts with the chosen and the rejected
    response."""

    chosen: TokenSequences
    rejected: TokenSequences

    def __len__(self) -> int:
        return len(self.chosen)


#: Supervised fine-tuning batches are prompt + target-response sequences.
SFTBatch = TokenSequences
