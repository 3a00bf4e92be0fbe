"""Environment specifications: Gymnasium, offline, PettingZoo, bandit and LLM environments.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home. They are pure descriptions: nothing here imports gymnasium, pettingzoo or
pandas, and no environment is built.
"""

from agilerl._generated.bandit_env_schema import BanditEnvSpec
from agilerl._generated.gym_env_schema import (
    Entrypoint,
    GymEnvFields,
    GymEnvSpec,
    WrapperConfig,
    WrapperTarget,
)
from agilerl._generated.llm_env_schema import LLMEnvFields, LLMReasoningEnvSpec
from agilerl._generated.llm_preference_env_schema import LLMPreferenceEnvSpec
from agilerl._generated.llm_sft_env_schema import LLMSftEnvSpec
from agilerl._generated.offline_env_schema import OfflineEnvSpec
from agilerl._generated.pettingzoo_env_schema import PettingZooEnvSpec

#: LLM environment specs by their ``env_type`` tag.
LLM_ENV_SPECS = {
    "reasoning": LLMReasoningEnvSpec,
    "preference": LLMPreferenceEnvSpec,
    "sft": LLMSftEnvSpec,
}

__all__ = [
    "LLM_ENV_SPECS",
    "BanditEnvSpec",
    "Entrypoint",
    "GymEnvFields",
    "GymEnvSpec",
    "LLMEnvFields",
    "LLMPreferenceEnvSpec",
    "LLMReasoningEnvSpec",
    "LLMSftEnvSpec",
    "OfflineEnvSpec",
    "PettingZooEnvSpec",
    "WrapperConfig",
    "WrapperTarget",
]
