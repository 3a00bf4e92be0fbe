"""Concrete algorithm specs, one module per algorithm (as AgileRL lays them out:
``agilerl.models.algorithms.dqn.DQNSpec``), each registered in
:data:`agilerl.models.algo.ALGO_REGISTRY` when its module is imported; importing this
package imports, hence registers, them all.

Their fields and algorithm facts (agent type, training loop, network spec, default
evolution steps, LLM environment type) come from ``schemas/``. A new algorithm is a
schema, a module here (its spec class and ``register()``) and a line below.
"""

from agilerl.models.algorithms.cispo import CISPOSpec
from agilerl.models.algorithms.cqn import CQNSpec
from agilerl.models.algorithms.ddpg import DDPGSpec
from agilerl.models.algorithms.dpo import DPOSpec
from agilerl.models.algorithms.dqn import DQNSpec
from agilerl.models.algorithms.grpo import GRPOSpec
from agilerl.models.algorithms.gspo import GSPOSpec
from agilerl.models.algorithms.ippo import IPPOSpec
from agilerl.models.algorithms.llmppo import LLMPPOSpec
from agilerl.models.algorithms.llmreinforce import LLMREINFORCESpec
from agilerl.models.algorithms.maddpg import MADDPGSpec
from agilerl.models.algorithms.matd3 import MATD3Spec
from agilerl.models.algorithms.neural_ts import NeuralTSSpec
from agilerl.models.algorithms.neural_ucb import NeuralUCBSpec
from agilerl.models.algorithms.ppo import PPOSpec
from agilerl.models.algorithms.rainbow_dqn import RainbowDQNSpec
from agilerl.models.algorithms.sft import SFTSpec
from agilerl.models.algorithms.td3 import TD3Spec

__all__ = [
    "CISPOSpec",
    "CQNSpec",
    "DDPGSpec",
    "DPOSpec",
    "DQNSpec",
    "GRPOSpec",
    "GSPOSpec",
    "IPPOSpec",
    "LLMPPOSpec",
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
