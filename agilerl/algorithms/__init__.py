"""RL algorithms of the torch engine (``DQNSpec.algo_class()`` resolves here).

Classes are imported on first access, so ``import agilerl.algorithms`` stays cheap and
an algorithm's module (and its dependencies) loads only when that algorithm is used.
"""

from __future__ import annotations

import importlib
from typing import Any

from agilerl.algorithms.hyperparameters import RLParameter

#: Algorithm class name -> module that defines it.
_MODULES = {
    "DQN": "agilerl.algorithms.dqn",
    "CQN": "agilerl.algorithms.cqn",
    "PPO": "agilerl.algorithms.ppo",
    "DDPG": "agilerl.algorithms.ddpg",
    "TD3": "agilerl.algorithms.td3",
    "RainbowDQN": "agilerl.algorithms.rainbow_dqn",
    "GRPO": "agilerl.algorithms.grpo",
    "GSPO": "agilerl.algorithms.gspo",
    "CISPO": "agilerl.algorithms.cispo",
    "LLMREINFORCE": "agilerl.algorithms.llm_reinforce",
    "LLMPPO": "agilerl.algorithms.llm_ppo",
    "DPO": "agilerl.algorithms.dpo",
    "SFT": "agilerl.algorithms.sft",
    "IPPO": "agilerl.algorithms.ippo",
    "MADDPG": "agilerl.algorithms.maddpg",
    "MATD3": "agilerl.algorithms.matd3",
    "NeuralUCB": "agilerl.algorithms.neural_ucb",
    "NeuralTS": "agilerl.algorithms.neural_ts",
}

#: Names of the algorithm classes (the only ones an agent checkpoint may ask for).
NAMES = tuple(_MODULES)

__all__ = [
    "NAMES",
    "EvolvableAlgorithm",
    "LLMAlgorithm",
    "MultiAgentRLAlgorithm",
    "RLAlgorithm",
    "RLParameter",
    *_MODULES,
]


#: What loads on first use, torch with it: the base class and each algorithm (so asking
#: which algorithms exist, :data:`NAMES`, stays light: ``agilerl validate`` does).
_LAZY = {
    "EvolvableAlgorithm": "agilerl.algorithms.core.evolvable",
    "RLAlgorithm": "agilerl.algorithms.core.rl_algorithm",
    "MultiAgentRLAlgorithm": "agilerl.algorithms.core.multi_agent",
    "LLMAlgorithm": "agilerl.algorithms.core.llm",
    **_MODULES,
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'agilerl.algorithms' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
