"""The trainer's table of agent families: how a run of each agent type is set up.

:class:`~agilerl.training.trainer.LocalTrainer` knows no agent type; it looks its
algorithm's up here. A row says which network section the family reads, how its
environment is made, which runtime arguments the spec's ``build_algorithm`` gets, how a
saved agent is rebuilt, what the pre-flight checks and what the run writes beside the
common outputs; the training function is the spec's own (``get_training_fn``). A family
the engine does not implement yet has a row that says so, and the trainer refuses it
before anything is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agilerl.models.base import AgentType, AlgorithmNotAvailableError, spec_class
from agilerl.models.manifest import NetworkSection


@dataclass(frozen=True)
class Family:
    """How the trainer runs the algorithms of one agent type. Callables take the trainer
    (:class:`~agilerl.training.trainer.LocalTrainer`) first."""

    #: What the family is called in messages.
    title: str
    #: The spec class of the manifest's ``network`` section.
    network_spec: type
    #: trainer -> the environment the run trains and evaluates on.
    make_env: Callable[[Any], Any]
    #: (trainer, environment, seed) -> the runtime arguments ``build_algorithm`` takes.
    build_args: Callable[[Any, Any, int], dict[str, Any]]
    #: environment spec -> the name runs, checkpoints and plots give the environment.
    env_name: Callable[[Any], str]
    #: (trainer, environment) -> worker processes the environment runs (thread choice).
    env_workers: Callable[[Any, Any], int]
    #: (trainer, environment) -> what rebuilds a saved agent (``from_state_dict``).
    agent_loader: Callable[[Any, Any], Any]
    #: (trainer, memory available or None) -> the family's own pre-flight checks (raise
    #: ``PreflightError``); returns the run's memory estimate where it makes one.
    preflight: Callable[[Any, int | None], Any]
    #: trainer -> algorithm spec fields the run fills in from other sections (an LLM
    #: agent's model path and LoRA settings come from the network section).
    spec_fields: Callable[[Any], dict[str, Any]] = lambda trainer: {}
    #: (trainer, agent) -> what its forward passes run, for the thread choice (anything
    #: with ``network_parameters()``): the agent itself, or an LLM agent's shared base.
    computes: Callable[[Any, Any], Any] = lambda trainer, agent: agent
    #: Whether run checkpoints save the environment's position (``env.state_dict()``):
    #: true where a resumed run cannot regain it from seeds (an LLM run's datasets).
    saves_env_position: bool = False
    #: environment -> None: release it at the end of the run.
    close_env: Callable[[Any], None] = lambda env: env.close()
    #: trainer -> the replay buffer of an off-policy run, where the family stores its own
    #: kind (None: the single-agent buffers of the replay_buffer section).
    make_memory: Callable[[Any], Any] | None = None
    #: best agent -> its network section as evolved (None: the manifest's stands).
    evolved_network: Callable[[Any], dict[str, Any]] | None = None
    #: (trainer, manifest document) -> None: the family's changes to the manifest the run
    #: writes (an LLM run's relative paths made absolute: the file lies elsewhere).
    written_manifest: Callable[[Any, dict[str, Any]], None] = lambda trainer, doc: None
    #: Whether a run on several processes splits the population among them (each rank
    #: trains its own agents); False: every rank trains every agent on its share of each
    #: batch (the LLM family's data-parallel fine-tuning).
    shards_population: bool = True
    #: What fitness and training scores measure (the fitness plot's axes).
    measure: str = "mean return"
    #: Outputs beside the common ones: kind -> (name in the output directory, writer of
    #: the best agent there).
    outputs: dict[str, tuple[str, Callable[[Any, Path], Any]]] = field(default_factory=dict)


def _gym_vector_env(trainer: Any) -> Any:
    from agilerl.training.envs import make_vector_env

    return make_vector_env(trainer.environment)


def _single_agent_args(trainer: Any, env: Any, seed: int) -> dict[str, Any]:
    return {
        "observation_space": env.single_observation_space,
        "action_space": env.single_action_space,
        "net_config": trainer.network,
        "seed": seed,
    }


def _single_agent_preflight(trainer: Any, available: int | None) -> Any:
    from agilerl.training.preflight import check_rl_run

    return check_rl_run(trainer, available)


def _evolved_mlp_network(best: Any) -> dict[str, Any]:
    """The best agent's policy network as a manifest network section."""
    network = best.policy.spec.model_dump(mode="json", exclude_none=True)
    encoder = dict(network.pop("encoder_config"))
    network["arch"] = encoder.pop("arch")
    network["encoder_config"] = encoder
    network["head_config"].pop("arch", None)
    return network


def _pettingzoo_vector_env(trainer: Any) -> Any:
    from agilerl.multi_agent.vector import make_vector_env

    return make_vector_env(trainer.environment)


def _multi_agent_args(trainer: Any, env: Any, seed: int) -> dict[str, Any]:
    return {
        "observation_spaces": env.observation_spaces,
        "action_spaces": env.action_spaces,
        "net_config": trainer.network,
        "seed": seed,
    }


def _multi_agent_memory(trainer: Any) -> Any:
    from agilerl.models.training import ReplayBufferSpec
    from agilerl.multi_agent.buffers import MultiAgentReplayBuffer

    spec = trainer.replay_buffer or ReplayBufferSpec()
    return MultiAgentReplayBuffer(spec.max_size, device=trainer.device)


def _multi_agent_preflight(trainer: Any, available: int | None) -> Any:
    from agilerl.training.preflight import check_multi_agent_run

    return check_multi_agent_run(trainer, available)


def _llm(name: str) -> Callable[..., Any]:
    """``agilerl.training.llm_setup.<name>``, imported on first use (transformers loads
    there)."""

    def call(*args: Any) -> Any:
        from agilerl.training import llm_setup

        return getattr(llm_setup, name)(*args)

    return call


def _llm_preflight(trainer: Any, available: int | None) -> None:
    from agilerl.training.preflight import check_llm_run

    check_llm_run(trainer)


def _offline(name: str) -> Callable[..., Any]:
    """``agilerl.offline.setup.<name>``, imported on first use (h5py loads there)."""

    def call(*args: Any) -> Any:
        from agilerl.offline import setup

        return getattr(setup, name)(*args)

    return call


def _bandits(name: str) -> Callable[..., Any]:
    """``agilerl.bandits.setup.<name>``, imported on first use."""

    def call(*args: Any) -> Any:
        from agilerl.bandits import setup

        return getattr(setup, name)(*args)

    return call


#: Agent type -> its family. Adding a family is adding a row (and its training function).
FAMILIES: dict[AgentType, Family] = {
    AgentType.SingleAgent: Family(
        title="single-agent",
        network_spec=NetworkSection,
        make_env=_gym_vector_env,
        build_args=_single_agent_args,
        env_name=lambda spec: spec.name,
        env_workers=lambda trainer, env: 0 if trainer.environment.sync else env.num_envs,
        agent_loader=lambda trainer, env: trainer.algorithm.algo_class(),
        preflight=_single_agent_preflight,
        evolved_network=_evolved_mlp_network,
    ),
    AgentType.MultiAgent: Family(
        title="multi-agent",
        network_spec=NetworkSection,
        make_env=_pettingzoo_vector_env,
        build_args=_multi_agent_args,
        env_name=lambda spec: spec.name,
        env_workers=lambda trainer, env: 0 if trainer.environment.sync else env.num_envs,
        agent_loader=lambda trainer, env: trainer.algorithm.algo_class(),
        preflight=_multi_agent_preflight,
        make_memory=_multi_agent_memory,
        # One network section serves every agent group and each group's networks evolve
        # on their own: the manifest's section stands (the agents' files hold the rest).
    ),
    AgentType.LLMAgent: Family(
        title="LLM fine-tuning",
        network_spec=spec_class("FinetuningNetworkSpec"),
        make_env=_llm("make_llm_env"),
        build_args=_llm("llm_build_args"),
        env_name=lambda spec: Path(spec.dataset).stem,
        env_workers=lambda trainer, env: 0,
        agent_loader=_llm("SharedBaseLoader"),
        spec_fields=_llm("llm_spec_fields"),
        preflight=_llm_preflight,
        saves_env_position=True,
        close_env=lambda env: None,  # datasets in memory: nothing to release
        written_manifest=_llm("llm_written_manifest"),
        computes=_llm("BaseCompute"),
        shards_population=False,
        measure="score: reward, accuracy or 1/perplexity",
        # The best agent's peft adapter directory, tokenizer beside it.
        outputs={"adapter": ("best_adapter", lambda best, path: best.save_adapter(path))},
    ),
    AgentType.OfflineAgent: Family(
        title="offline",
        network_spec=NetworkSection,
        # The evaluation environment; the transitions come from the dataset file.
        make_env=_gym_vector_env,
        build_args=_single_agent_args,
        env_name=lambda spec: spec.name,
        env_workers=lambda trainer, env: 0 if trainer.environment.sync else env.num_envs,
        agent_loader=lambda trainer, env: trainer.algorithm.algo_class(),
        preflight=_offline("check_offline_run"),
        make_memory=_offline("offline_memory"),
        written_manifest=_offline("offline_written_manifest"),
        evolved_network=_evolved_mlp_network,
    ),
    AgentType.BanditAgent: Family(
        title="contextual bandit",
        network_spec=NetworkSection,
        make_env=_bandits("make_bandit_env"),
        build_args=_bandits("bandit_build_args"),
        env_name=lambda spec: spec.name,
        env_workers=lambda trainer, env: 0,
        agent_loader=lambda trainer, env: trainer.algorithm.algo_class(),
        preflight=_bandits("bandit_preflight"),
        make_memory=_bandits("bandit_memory"),
        written_manifest=_bandits("bandit_written_manifest"),
        evolved_network=_evolved_mlp_network,
        measure="reward rate, 0 to 1",
        # The best agent's cumulative regret over its lineage's pulls.
        outputs={"regret": ("regret.png", _bandits("regret_plot"))},
    ),
}

#: Agent types whose specs exist but whose family the engine does not implement yet.
NOT_IMPLEMENTED: dict[AgentType, str] = {}


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
