"""``LLMEnvType`` (agilerl/models/env_types.py): the reference's enum of LLM environments,
importable where AgileRL's users import it, carried by each LLM algorithm spec."""

from __future__ import annotations

import json

import pytest

from agilerl.models import (
    CISPOSpec,
    DPOSpec,
    DQNSpec,
    GRPOSpec,
    GSPOSpec,
    LLMPPOSpec,
    LLMREINFORCESpec,
    SFTSpec,
)
from agilerl.models.env import (
    LLM_ENV_SPECS,
    LLMPreferenceEnvSpec,
    LLMReasoningEnvSpec,
    LLMSftEnvSpec,
)
from agilerl.models.env import LLMEnvType as FromEnv
from agilerl.models.env_types import LLMEnvType
from agilerl.models.manifest_base import environment_spec_for


def test_the_members_are_the_reference_values_and_are_strings():
    assert FromEnv is LLMEnvType
    assert [m.value for m in LLMEnvType] == ["reasoning", "preference", "sft", "multiturn"]
    assert LLMEnvType.SFT == "sft" and str(LLMEnvType.SFT) == "sft" and f"{LLMEnvType.SFT}" == "sft"
    assert LLMEnvType("preference") is LLMEnvType.PREFERENCE
    assert json.dumps({"env_type": LLMEnvType.REASONING}) == '{"env_type": "reasoning"}'


@pytest.mark.parametrize(
    ("spec", "env_type", "environment"),
    [
        (GRPOSpec, LLMEnvType.REASONING, LLMReasoningEnvSpec),
        (GSPOSpec, LLMEnvType.REASONING, LLMReasoningEnvSpec),
        (CISPOSpec, LLMEnvType.REASONING, LLMReasoningEnvSpec),
        (LLMREINFORCESpec, LLMEnvType.REASONING, LLMReasoningEnvSpec),
        (LLMPPOSpec, LLMEnvType.REASONING, LLMReasoningEnvSpec),
        (DPOSpec, LLMEnvType.PREFERENCE, LLMPreferenceEnvSpec),
        (SFTSpec, LLMEnvType.SFT, LLMSftEnvSpec),
    ],
)
def test_each_llm_algorithm_carries_its_environment_type(spec, env_type, environment):
    assert spec.env_type is env_type
    assert LLM_ENV_SPECS[env_type] is LLM_ENV_SPECS[env_type.value] is environment
    assert environment_spec_for(spec) is environment
    assert environment.model_fields["env_type"].default == env_type


def test_an_rl_algorithm_has_no_environment_type():
    assert DQNSpec.env_type is None
