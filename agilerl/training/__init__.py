"""Training loops (with evolutionary HPO) and the trainer that runs a manifest.

``DQNSpec.get_training_fn()`` resolves to :func:`train_off_policy`,
``PPOSpec.get_training_fn()`` to :func:`train_on_policy`, MADDPG's and MATD3's to
:func:`train_multi_agent_off_policy`, IPPO's to :func:`train_multi_agent_on_policy`,
CQN's to :func:`train_offline`, NeuralUCB's and NeuralTS's to :func:`train_bandits`,
the LLM specs' to the ``finetune_llm_*`` entry points of :func:`finetune_llm`.
"""

from agilerl.training.bandits import train_bandits
from agilerl.training.llm_loop import (
    finetune_llm,
    finetune_llm_preference,
    finetune_llm_reasoning,
    finetune_llm_sft,
)
from agilerl.training.multi_agent_loops import (
    train_multi_agent_off_policy,
    train_multi_agent_on_policy,
)
from agilerl.training.off_policy import train_off_policy
from agilerl.training.offline import train_offline
from agilerl.training.on_policy import train_on_policy
from agilerl.training.trainer import LocalTrainer, TrainerError

__all__ = [
    "LocalTrainer",
    "TrainerError",
    "finetune_llm",
    "finetune_llm_preference",
    "finetune_llm_reasoning",
    "finetune_llm_sft",
    "train_bandits",
    "train_multi_agent_off_policy",
    "train_multi_agent_on_policy",
    "train_off_policy",
    "train_offline",
    "train_on_policy",
]
