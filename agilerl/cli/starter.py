"""Starter manifests (``agilerl init``): every algorithm field with its default, and
small, valid choices for the other sections that the user then edits."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection
from typing import Any

from pydantic_core import PydanticUndefined

from agilerl.models.base import AlgorithmBase
from agilerl.models.env import AtariPreprocessing
from agilerl.models.kinds import uses_replay_memory
from agilerl.models.limits import hyperparameter_limits
from agilerl.models.manifest import repeated_algorithm_fields
from agilerl.models.manifest_base import environment_spec_for, network_section_for

#: A suitable environment per agent type (continuous actions get Pendulum).
_ENVIRONMENTS: dict[str, dict[str, Any]] = {
    "GymEnvSpec": {"name": "CartPole-v1", "num_envs": 8},
    "OfflineEnvSpec": {"name": "CartPole-v1", "num_envs": 8, "dataset_path": "data/cartpole.h5"},
    "BanditEnvSpec": {
        "name": "IRIS",
        "features": "data/features.csv",
        "targets": "data/targets.csv",
    },
    "PzEnvSpec": {"name": "mpe2.simple_speaker_listener_v4", "num_envs": 8},
    "LLMReasoningEnvSpec": {
        "dataset": "data/reasoning.jsonl",
        "reward_file_path": "reward.py",
        "reward_fn_name": "reward",
        "prompt_template": {"system_0": "You are a helpful assistant.", "user_1": "{question}"},
    },
    "LLMPreferenceEnvSpec": {"dataset": "data/preferences.jsonl"},
    "LLMSftEnvSpec": {"dataset": "data/sft.jsonl"},
}

#: A network to start from, per network section: an RL encoder and head, or a pretrained
#: LLM with LoRA adapters.
_NETWORKS: dict[str, dict[str, Any]] = {
    "NetworkSection": {
        "arch": "mlp",
        "latent_dim": 64,
        "encoder_config": {"hidden_size": [64, 64]},
        "head_config": {"hidden_size": [64]},
    },
    "FinetuningNetworkSpec": {
        "pretrained_model_name_or_path": "path/to/pretrained-model",
        "max_context_length": 1024,
        "lora_config": {"lora_r": 16, "lora_alpha": 32},
    },
}

#: Environment id namespaces whose games train only preprocessed, by what the
#: environment section then says: ALE's Atari games as 84x84 grey frames, 4 stacked.
_PREPROCESSING: dict[str, dict[str, Any]] = {
    "ALE": {"atari": AtariPreprocessing().model_dump()},
}

#: The network for image observations (the preprocessed Atari games): the convolutions
#: of DQN's Nature network (32, 64, 64 channels; kernels 8, 4, 3; strides 4, 2, 1) and
#: its 512 features.
_IMAGE_NETWORK: dict[str, Any] = {
    "arch": "cnn",
    "latent_dim": 512,
    "max_latent_dim": 512,
    "encoder_config": {
        "channel_size": [32, 64, 64],
        "kernel_size": [8, 4, 3],
        "stride_size": [4, 2, 1],
    },
    "head_config": {"hidden_size": [256]},
}

#: Mutation probabilities per network section: a pretrained LLM's architecture does not
#: mutate (nor its parameters by noise), an RL network's does.
_PROBABILITIES: dict[str, dict[str, float]] = {
    "NetworkSection": {
        "no_mut": 0.4,
        "arch_mut": 0.2,
        "new_layer": 0.2,
        "params_mut": 0.2,
        "act_mut": 0.0,
        "rl_hp_mut": 0.2,
    },
    "FinetuningNetworkSpec": {
        "no_mut": 0.4,
        "arch_mut": 0.0,
        "new_layer": 0.0,
        "params_mut": 0.0,
        "act_mut": 0.0,
        "rl_hp_mut": 0.2,
    },
}


#: The longest environment name (or LLM dataset) ``agilerl init --env`` takes. The schemas
#: bound no environment name (a label may be anything), but no registered Gymnasium,
#: PettingZoo or Minari id comes near it, and the default file name
#: (``<algorithm>-<environment>.yaml``) must stay within the 255 bytes a file name may have.
MAX_ENV_CHARS = 200


def env_refusal(env_name: str) -> str | None:
    """Why ``agilerl init --env`` cannot take ``env_name``, or None when it can."""
    if not env_name.strip():
        return (
            "--env: empty; name an environment (e.g. CartPole-v1), or leave --env out for "
            "one that suits the algorithm"
        )
    if len(env_name) > MAX_ENV_CHARS:
        return (
            f"--env: {len(env_name):,} characters, more than the {MAX_ENV_CHARS} an "
            "environment name may have (the starter file is named after it); name a "
            "registered environment, e.g. CartPole-v1"
        )
    return None


def _algorithm_section(spec_cls: type[AlgorithmBase]) -> dict[str, Any]:
    section: dict[str, Any] = {"name": spec_cls.__name__.removesuffix("Spec")}
    # Fields another section decides (PPO's num_envs is the environment's) stay out.
    repeated = repeated_algorithm_fields()
    for name, field in spec_cls.model_fields.items():
        if name in repeated:
            continue
        if field.default is PydanticUndefined:  # required: an example value from the schema
            section[name] = (field.examples or [8])[0]
        elif field.default is not None:
            section[name] = field.default
    return section


def _hyperparameter_ranges(section: dict[str, Any], mutable: Collection[str]) -> dict[str, Any]:
    """Ranges of the learning rates and the batch size among the ``mutable``
    hyperparameters (a nullable rate, as LLM-PPO's ``lr_critic``, is not one)."""
    ranges = {}
    for name, value in section.items():
        if name in mutable and name.startswith("lr") and isinstance(value, float) and value > 0:
            ranges[name] = {"min": value / 10, "max": value * 10}
    if "batch_size" in section:
        ranges["batch_size"] = {"min": 8, "max": 512}
    return ranges


def default_file_name(manifest: dict[str, Any]) -> str:
    """``<algorithm>-<environment>.yaml`` (``ppo-lunarlander-v3.yaml``): ``agilerl train``
    names its default output directory after the file (``runs/ppo-lunarlander-v3/``), so
    a started manifest never shares the examples' (``configs/ppo.yaml``: ``runs/ppo/``)."""
    name = manifest["algorithm"]["name"].lower()
    env = manifest["environment"].get("name")
    if env:
        name += "-" + re.sub(r"[^a-z0-9]+", "-", env.lower()).strip("-")
    return f"{name}.yaml"


def starter_manifest(
    spec_cls: type[AlgorithmBase],
    env_name: str | None = None,
    image_observations: bool | None = None,
) -> dict[str, Any]:
    """A valid manifest for ``spec_cls`` to start from. A Gymnasium environment with
    image observations (``image_observations``; None: only the games :data:`_PREPROCESSING`
    knows) gets a CNN network; an Atari game its preprocessing, and an off-policy
    algorithm a buffer that stores its frames once."""
    algorithm = _algorithm_section(spec_cls)
    env_title = environment_spec_for(spec_cls).__name__
    environment = dict(_ENVIRONMENTS[env_title])
    if spec_cls.network_spec_name == "DeterministicActorSpec" and env_title == "GymEnvSpec":
        environment["name"] = "Pendulum-v1"
    if env_name:
        environment["dataset" if "dataset" in environment else "name"] = env_name
    network_title = network_section_for(spec_cls).__name__
    network = copy.deepcopy(_NETWORKS[network_title])
    if env_name and env_title == "GymEnvSpec":
        environment.update(copy.deepcopy(_PREPROCESSING.get(env_name.partition("/")[0], {})))
        if image_observations is None:
            image_observations = "atari" in environment
        if image_observations:
            network = copy.deepcopy(_IMAGE_NETWORK)
    manifest: dict[str, Any] = {
        "version": 1,
        "algorithm": algorithm,
        "environment": environment,
        "network": network,
        "training": {
            "max_steps": 100_000,
            "pop_size": 4,
            "evo_steps": spec_cls.default_evo_steps,
            "eval_loop": 1,
        },
        "mutation": {
            "probabilities": dict(_PROBABILITIES[network_title]),
            "rl_hp_selection": _hyperparameter_ranges(algorithm, hyperparameter_limits(spec_cls)),
            "mutation_sd": 0.1,
            "rand_seed": 42,
        },
        "selection_strategy": {"tournament_size": 2, "elitism": True},
    }
    if uses_replay_memory(spec_cls.agent_type, spec_cls.off_policy):
        replay: dict[str, Any] = {"max_size": 100_000}
        if "atari" in environment:  # stacked frames
            replay["storage"] = "frames"
        manifest["replay_buffer"] = replay
    return manifest
