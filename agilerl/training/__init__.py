"""The generation machinery every family shares: :func:`~.evolution.evolve` over a
:class:`~.evolution.RunConfig`, the run state, run checkpoints and directories, tracking,
the report, the thread rule and the generic pre-flight.

The training functions live with their families (:mod:`agilerl.families`); the names
AgileRL gives them are kept here, looked up by name on first use (as
``DQNSpec.get_training_fn()`` does), so ``from agilerl.training import train_off_policy``
works and no module of this package imports a family:

``train_off_policy``, ``train_on_policy`` (single-agent), ``train_multi_agent_off_policy``,
``train_multi_agent_on_policy`` (multi-agent), ``train_offline``, ``train_bandits``, the
``finetune_llm_*`` entry points of ``finetune_llm`` (LLM), and ``LocalTrainer`` /
``TrainerError`` (:mod:`agilerl.trainer`).
"""

from __future__ import annotations

import importlib
from typing import Any

#: AgileRL's names under ``agilerl.training`` -> the module that defines them.
ENTRY_POINTS = {
    "train_off_policy": "agilerl.families.single_agent.off_policy",
    "train_on_policy": "agilerl.families.single_agent.on_policy",
    "train_multi_agent_off_policy": "agilerl.families.multi_agent.loops",
    "train_multi_agent_on_policy": "agilerl.families.multi_agent.loops",
    "train_offline": "agilerl.families.offline.loop",
    "train_bandits": "agilerl.families.bandits.loop",
    "finetune_llm": "agilerl.families.llm.loop",
    "finetune_llm_reasoning": "agilerl.families.llm.loop",
    "finetune_llm_preference": "agilerl.families.llm.loop",
    "finetune_llm_sft": "agilerl.families.llm.loop",
    "finetune_llm_multiturn": "agilerl.families.llm.loop",
    "LocalTrainer": "agilerl.trainer",
    "TrainerError": "agilerl.training.errors",
}

__all__ = sorted(ENTRY_POINTS)


def __getattr__(name: str) -> Any:
    if name not in ENTRY_POINTS:
        raise AttributeError(f"module 'agilerl.training' has no attribute {name!r}")
    return getattr(importlib.import_module(ENTRY_POINTS[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *ENTRY_POINTS})
