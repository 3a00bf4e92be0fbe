"""``LLMEnvType``: which LLM environment an LLM algorithm trains in, by the name AgileRL
gives it (``agilerl.models.env_types``, re-exported by :mod:`agilerl.models.env`).

Each LLM algorithm spec carries its type as the ClassVar ``env_type`` (GRPO: reasoning,
DPO: preference, SFT: sft), from its schema's ``x-agilerl-algorithm`` facts; the
environment sections tag themselves with the same values (``env_type: reasoning``). The
members are strings: ``LLMEnvType.SFT == "sft"``, ``str(LLMEnvType.SFT) == "sft"``, and
either looks up the same table entry.
"""

from __future__ import annotations

from enum import Enum


class LLMEnvType(str, Enum):
    """The LLM environments. ``MULTITURN``: a multi-turn text environment (a Python class
    or factory named by ``entrypoint``), which the sampling algorithms (GRPO, GSPO,
    CISPO, LLM-REINFORCE) train in besides their reasoning datasets."""

    REASONING = "reasoning"
    PREFERENCE = "preference"
    SFT = "sft"
    MULTITURN = "multiturn"

    def __str__(self) -> str:
        return self.value


__all__ = ["LLMEnvType"]
