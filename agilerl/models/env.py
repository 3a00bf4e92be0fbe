"""Environment specifications: Gymnasium, offline, PettingZoo, bandit and LLM environments,
by AgileRL's names (``EnvSpec``, ``GymEnvSpec``, ``OfflineEnvSpec``, ``PzEnvSpec``,
``BanditEnvSpec``, ``LLMEnvSpec``, ``LLMEnvType``).

The classes are generated from ``schemas/`` (see ``generated/``); this module is their
public home. Importing it imports no gymnasium, pettingzoo, pandas or torch: the specs'
``make_env`` / ``make_single_env`` / ``construct_custom_env_fn``
(:mod:`agilerl.models.env_base`) load the engine when called.

``PettingZooEnvSpec`` is ``PzEnvSpec`` under this project's earlier name. The
``LLMReasoningEnvSpec`` / ``LLMPreferenceEnvSpec`` / ``LLMSftEnvSpec`` classes are a
manifest's LLM environment section for an algorithm of each ``env_type``: LLMEnvSpec's
fields and rules with ``env_type`` defaulting to the algorithm's.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agilerl.models.env_types import LLMEnvType

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.bandit_env_schema import BanditEnvSpec
    from generated.gym_env_schema import (
        AtariPreprocessing,
        Entrypoint,
        EnvSpec,
        GymEnvFields,
        GymEnvSpec,
        WrapperConfig,
        WrapperTarget,
    )
    from generated.llm_env_schema import LLMEnvFields, LLMEnvSpec
    from generated.llm_preference_env_schema import LLMPreferenceEnvSpec
    from generated.llm_reasoning_env_schema import LLMReasoningEnvSpec
    from generated.llm_sft_env_schema import LLMSftEnvSpec
    from generated.offline_env_schema import OfflineEnvSpec
    from generated.pettingzoo_env_schema import PzEnvSpec
else:
    from agilerl._generated.bandit_env_schema import BanditEnvSpec
    from agilerl._generated.gym_env_schema import (
        AtariPreprocessing,
        Entrypoint,
        EnvSpec,
        GymEnvFields,
        GymEnvSpec,
        WrapperConfig,
        WrapperTarget,
    )
    from agilerl._generated.llm_env_schema import LLMEnvFields, LLMEnvSpec
    from agilerl._generated.llm_preference_env_schema import LLMPreferenceEnvSpec
    from agilerl._generated.llm_reasoning_env_schema import LLMReasoningEnvSpec
    from agilerl._generated.llm_sft_env_schema import LLMSftEnvSpec
    from agilerl._generated.offline_env_schema import OfflineEnvSpec
    from agilerl._generated.pettingzoo_env_schema import PzEnvSpec

#: This project's earlier name of :class:`PzEnvSpec` (docs and code used it): the same class.
PettingZooEnvSpec = PzEnvSpec

#: A manifest's LLM environment section by the algorithm's ``env_type`` (a
#: :class:`LLMEnvType`, which is also its string); each is an LLMEnvSpec with that default.
LLM_ENV_SPECS = {
    LLMEnvType.REASONING: LLMReasoningEnvSpec,
    LLMEnvType.PREFERENCE: LLMPreferenceEnvSpec,
    LLMEnvType.SFT: LLMSftEnvSpec,
}

#: A bandit's table fields, given together in a manifest.
BANDIT_TABLES = ("features", "targets")


def missing_bandit_tables(environment: Any) -> str | None:
    """Why a bandit section cannot run from a manifest (None: it names both tables or an
    entry point, not both). The schema lets every source be null because a run in Python
    may give its bandit as ``env=`` instead; a manifest has no such object, so ``agilerl
    validate`` and every run of a manifest refuse a section without one."""
    tables = [key for key in BANDIT_TABLES if getattr(environment, key) is not None]
    if environment.entrypoint is not None:
        if tables:
            return (
                f"environment.{tables[0]}: the bandit comes from environment.entrypoint "
                f"({environment.entrypoint}): give the tables or an entry point, not both"
            )
        return None
    missing = [key for key in BANDIT_TABLES if key not in tables]
    if not missing:
        return None
    return (
        f"environment.{missing[0]}: a contextual bandit manifest names both tables, "
        "features and targets (each a .csv, .parquet or .pq file), or an entrypoint that "
        "returns the bandit (in Python, LocalTrainer(..., env=BanditEnv(features, "
        "targets)) gives tables held in memory)"
    )


#: The fields of an offline section that name its dataset (exactly one is given, by the
#: schema's rule), and with ``remote`` those the evaluation environment does not have.
OFFLINE_SOURCES = ("dataset_path", "minari_dataset_id")
OFFLINE_DATASET_FIELDS = (*OFFLINE_SOURCES, "remote")


def remote_dataset(environment: Any) -> str | None:
    """Why an offline section cannot run (None: it can): ``remote: true`` asks for a
    download at run time, which this project never does. AgileRL's field is kept so its
    manifests (``remote: false`` or no key) read as they are."""
    if not environment.remote:
        return None
    fetch = (
        f"`minari download {environment.minari_dataset_id}`"
        if environment.minari_dataset_id is not None
        else "`minari download ID`"
    )
    return (
        "environment.remote: nothing is downloaded at run time; put the dataset in the "
        f"local Minari data directory first ({fetch}) and leave remote out"
    )


def gem_env_name(environment: Any) -> str | None:
    """Why an LLM environment cannot run here (None: it can). A multi-turn section that
    names a GEM environment (``env_name``, AgileRL's multi-turn gym) validates, so
    AgileRL's manifests read as theirs, but GEM's games need the gem-llm package and its
    assets, which this project does not install; a Python class or factory named by
    ``entrypoint`` is trained instead."""
    if environment.env_type != LLMEnvType.MULTITURN or environment.env_name is None:
        return None
    return (
        f"environment.env_name: {environment.env_name!r} is a GEM environment, which needs "
        "the gem-llm package and its assets (not installed here); name a Python class or "
        "factory of a multi-turn environment with environment.entrypoint instead "
        "(docs/concepts/multiturn.md)"
    )


#: What every run of a schema-valid manifest refuses before its first step, by the
#: environment spec class, where the section alone tells (``agilerl validate`` says it;
#: the engine refuses the same when it builds the environment).
RUN_REFUSALS: dict[type, Callable[[Any], str | None]] = {
    BanditEnvSpec: missing_bandit_tables,
    LLMEnvSpec: gem_env_name,
    OfflineEnvSpec: remote_dataset,
    LLMReasoningEnvSpec: gem_env_name,
}

__all__ = [
    "BANDIT_TABLES",
    "LLM_ENV_SPECS",
    "OFFLINE_DATASET_FIELDS",
    "OFFLINE_SOURCES",
    "RUN_REFUSALS",
    "AtariPreprocessing",
    "BanditEnvSpec",
    "Entrypoint",
    "EnvSpec",
    "GymEnvFields",
    "GymEnvSpec",
    "LLMEnvFields",
    "LLMEnvSpec",
    "LLMEnvType",
    "LLMPreferenceEnvSpec",
    "LLMReasoningEnvSpec",
    "LLMSftEnvSpec",
    "OfflineEnvSpec",
    "PettingZooEnvSpec",
    "PzEnvSpec",
    "WrapperConfig",
    "WrapperTarget",
    "missing_bandit_tables",
    "remote_dataset",
    "gem_env_name",
]
