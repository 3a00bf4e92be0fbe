"""Conversations as token ids, shared by the dataset environments and the multi-turn
rollout: a conversation rendered with the tokenizer's chat template, its token ids, and
rows of ids padded into a batch."""

from __future__ import annotations

from typing import Any

import torch


def render_messages(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """A conversation as prompt text: the tokenizer's chat template when it has one
    (ending in a generation prompt, or continuing a final assistant message), otherwise
    one ``role: text`` line per message and an ``assistant:`` line to answer on."""
    ends_with_answer = messages[-1]["role"] == "assistant"
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(
            messages,
            tokenize=False,
            add_generation_prompt=not ends_with_answer,
            continue_final_message=ends_with_answer,
        )
    lines = [f"{message['role']}: {message['content']}" for message in messages]
    return "\n".join(lines if ends_with_answer else [*lines, "assistant:"])


def prompt_ids(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """Token ids of rendered prompts."""
    # A chat template writes its own special tokens; a plain rendering gets the usual ones.
    special = not getattr(tokenizer, "chat_template", None)
    return tokenizer(texts, add_special_tokens=special)["input_ids"]


def pad(rows: list[list[int]], pad_id: int, *, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of token ids as ``(ids, attention mask)``, padded with ``pad_id`` on the left
    (prompts: generation continues every row at the same column) or on the right."""
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[i, span] = torch.tensor(row, dtype=torch.long)
        mask[i, span] = 1
    return ids, mask
