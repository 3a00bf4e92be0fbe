"""Concrete algorithm specs, registered in :data:`agilerl.models.algo.ALGO_REGISTRY`.

Their fields and algorithm facts (agent type, training loop, network spec, default
evolution steps, LLM environment type) come from ``schemas/``.
"""

from agilerl._generated.cispo_schema import CISPOSpec
from agilerl._generated.cqn_schema import CQNSpec
from agilerl._generated.ddpg_schema import DDPGSpec
from agilerl._generated.dpo_schema import DPOSpec
from agilerl._generated.dqn_schema import DQNSpec
from agilerl._generated.grpo_schema import GRPOSpec
from agilerl._generated.gspo_schema import GSPOSpec
from agilerl._generated.ippo_schema import IPPOSpec
from agilerl._generated.llm_reinforce_schema import LLMREINFORCESpec
from agilerl._generated.maddpg_schema import MADDPGSpec
from agilerl._generated.matd3_schema import MATD3Spec
from agilerl._generated.neural_ts_schema import NeuralTSSpec
from agilerl._generated.neural_ucb_schema import NeuralUCBSpec
from agilerl._generated.ppo_schema import PPOSpec
from agilerl._generated.rainbow_dqn_schema import RainbowDQNSpec
from agilerl._generated.sft_schema import SFTSpec
from agilerl._generated.td3_schema import TD3Spec
from agilerl.models.registry import register

for _spec in (
    # single-agent
    DQNSpec,
    RainbowDQNSpec,
    DDPGSpec,
    TD3Spec,
    PPOSpec,
    CQNSpec,
    NeuralUCBSpec,
    NeuralTSSpec,
    # multi-agent
    IPPOSpec,
    MADDPGSpec,
    MATD3Spec,
    # LLM
    GRPOSpec,
    GSPOSpec,
    CISPOSpec,
    LLMREINFORCESpec,
    DPOSpec,
    SFTSpec,
):
    register()(_spec)

__all__ = [
    "CISPOSpec",
    "CQNSpec",
    "DDPGSpec",
    "DPOSpec",
    "DQNSpec",
    "GRPOSpec",
    "GSPOSpec",
    "IPPOSpec",
    "LLMREINFORCESpec",
    "MADDPGSpec",
    "MATD3Spec",
    "NeuralTSSpec",
    "NeuralUCBSpec",
    "PPOSpec",
    "RainbowDQNSpec",
    "SFTSpec",
    "TD3Spec",
]
