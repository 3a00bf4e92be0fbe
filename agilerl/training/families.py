"""The trainer's table of agent families: how a run of each agent type is set up.

:class:`~agilerl.training.trainer.LocalTrainer` knows no agent type; it looks its
algorithm's up here. A row says which environment section the family trains on, how
that environment is made, and which runtime arguments the spec's ``build_algorithm``
gets from it; the training function is the spec's own (``get_training_fn``). A family
the engine does not implement yet has a row that says so, and the trainer refuses it
before anything is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agilerl.models.base import AgentType, AlgorithmNotAvailableError
from agilerl.models.env import GymEnvSpec


@dataclass(frozen=True)
class Family:
    """How the trainer runs the algorithms of one agent type."""

    #: What the family is called in messages.
    title: str
    #: The spec class of the manifest's ``environment`` section.
    env_spec: type
    #: environment spec -> the (vectorised) environment the run trains and evaluates on.
    make_env: Callable[[Any], Any]
    #: environment -> the runtime arguments ``build_algorithm`` takes from it.
    build_args: Callable[[Any], dict[str, Any]]


def _gym_vector_env(spec: GymEnvSpec) -> Any:
    from agilerl.training.envs import make_vector_env

    return make_vector_env(spec)


def _single_agent_args(env: Any) -> dict[str, Any]:
    return {
        "observation_space": env.single_observation_space,
        "action_space": env.single_action_space,
    }


#: Agent type -> its family. Adding a family is adding a row (and its training function).
FAMILIES: dict[AgentType, Family] = {
    AgentType.SingleAgent: Family(
        title="single-agent",
        env_spec=GymEnvSpec,
        make_env=_gym_vector_env,
        build_args=_single_agent_args,
    ),
}

#: Agent types whose specs exist but whose family the engine does not implement yet.
NOT_IMPLEMENTED: dict[AgentType, str] = {
    AgentType.MultiAgent: "multi-agent training (IPPO, MADDPG, MATD3 on PettingZoo)",
    AgentType.LLMAgent: "LLM fine-tuning (GRPO, DPO, SFT)",
    AgentType.OfflineAgent: "offline training from datasets (CQN)",
    AgentType.BanditAgent: "contextual-bandit training (NeuralUCB, NeuralTS)",
}


def family_for(algorithm: Any) -> Family:
    """The family of an algorithm spec; :class:`AlgorithmNotAvailableError` naming
    ``algorithm`` for one the engine does not implement yet."""
    family = FAMILIES.get(algorithm.agent_type)
    if family is not None:
        return family
    what = NOT_IMPLEMENTED.get(algorithm.agent_type, f"agent type {algorithm.agent_type}")
    raise AlgorithmNotAvailableError(
        f"algorithm: {algorithm.name} is a {algorithm.agent_type.value} algorithm; "
        f"{what} is not implemented in this engine yet"
    )
