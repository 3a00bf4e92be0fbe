"""Environment specifications: Gymnasium, offline, PettingZoo, bandit and LLM environments.

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home. They are pure descriptions: nothing here imports gymnasium, pettingzoo or
pandas, and no environment is built.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.bandit_env_schema import BanditEnvSpec
    from generated.gym_env_schema import (
        AtariPreprocessing,
        Entrypoint,
        GymEnvFields,
        GymEnvSpec,
        WrapperConfig,
        WrapperTarget,
    )
    from generated.llm_env_schema import LLMEnvFields, LLMReasoningEnvSpec
    from generated.llm_preference_env_schema import LLMPreferenceEnvSpec
    from generated.llm_sft_env_schema import LLMSftEnvSpec
    from generated.offline_env_schema import OfflineEnvSpec
    from generated.pettingzoo_env_schema import PettingZooEnvSpec
else:
    from agilerl._generated.bandit_env_schema import BanditEnvSpec
    from agilerl._generated.gym_env_schema import (
        AtariPreprocessing,
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
    "AtariPreprocessing",
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
