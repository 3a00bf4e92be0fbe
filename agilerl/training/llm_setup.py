"""Setting up an LLM run for the trainer (the LLM row of :mod:`agilerl.training.families`).

The run loads the tokenizer and the base model ONCE (:func:`shared_base`) and gives that
one model to every agent (``actor_network``): the population shares the frozen base and
each agent adds its own LoRA adapter. Relative paths of the manifest (the model, the
dataset, the reward file) resolve against the manifest's directory (``trainer.base_dir``).
Nothing is downloaded: every file is local (:mod:`agilerl.llm.models`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.training.trainer import TrainerError


@dataclass
class Base:
    """The run's tokenizer and base model, shared by every agent."""

    tokenizer: Any
    model: Any


def model_location(trainer: Any) -> tuple[Path, str]:
    """The model directory (resolved against the manifest's directory) and the field that
    names it: the network section's, else the algorithm's own."""
    network = trainer.network
    if network is not None:
        raw, field = network.pretrained_model_name_or_path, "network.pretrained_model_name_or_path"
    else:
        raw = trainer.algorithm.pretrained_model_name_or_path
        field = "algorithm.pretrained_model_name_or_path"
    if raw is None:
        raise TrainerError(
            "network.pretrained_model_name_or_path: required: the local directory of the "
            "pretrained model to fine-tune"
        )
    return _resolved(trainer, raw), field


def _resolved(trainer: Any, raw: str) -> Path:
    """``raw`` resolved against the manifest's directory."""
    return (trainer.base_dir / Path(raw).expanduser()).resolve()


def shared_base(trainer: Any) -> Base:
    """The run's tokenizer and base model, loaded on first use and kept on the trainer
    (the pre-flight loads them; the run uses the same ones)."""
    cached = trainer.__dict__.get("_llm_base")
    if cached is not None:
        return cached
    from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer

    path, field = model_location(trainer)
    try:
        tokenizer = load_tokenizer(path, field=field)
        model = load_causal_lm(
            path, field=field, attn_implementation=trainer.algorithm.attn_implementation
        )
    except LLMSetupError as err:
        raise TrainerError(str(err)) from None
    trainer.__dict__["_llm_base"] = Base(tokenizer, model)
    return trainer.__dict__["_llm_base"]


def make_llm_env(trainer: Any) -> Any:
    """The run's environment (:func:`agilerl.llm.environments.build_llm_env`): batches
    of ``algorithm.batch_size`` prompts, at most ``network.max_context_length`` tokens,
    shuffled with the run's seed."""
    from agilerl.distributed.group import launched_world_size
    from agilerl.llm.data_parallel import check_divisible, launch_refusals
    from agilerl.llm.environments import build_llm_env
    from agilerl.llm.models import LLMSetupError

    # A data-parallel run (several processes) splits every batch over them.
    problems = launch_refusals()
    try:
        check_divisible(trainer.algorithm.batch_size, launched_world_size(), "algorithm.batch_size")
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise TrainerError("; ".join(problems))
    network = trainer.network
    try:
        return build_llm_env(
            trainer.environment,
            shared_base(trainer).tokenizer,
            batch_size=trainer.algorithm.batch_size,
            max_context_length=None if network is None else network.max_context_length,
            seed=trainer.training.seed if trainer.training.seed is not None else 0,
            base_dir=trainer.base_dir,
        )
    except LLMSetupError as err:
        raise TrainerError(str(err)) from None


def llm_build_args(trainer: Any, env: Any, seed: int) -> dict[str, Any]:
    """``build_algorithm``'s runtime arguments: the shared tokenizer and base model (the
    agent's own ``seed`` field seeds it)."""
    base = shared_base(trainer)
    return {"tokenizer": base.tokenizer, "actor_network": base.model}


def llm_spec_fields(trainer: Any) -> dict[str, Any]:
    """Algorithm fields the network section fills: the model directory (resolved) and
    the LoRA settings, where the algorithm section leaves them unset."""
    path, _ = model_location(trainer)
    fields: dict[str, Any] = {"pretrained_model_name_or_path": str(path)}
    network = trainer.network
    if trainer.algorithm.lora_config is None and network is not None and network.lora_config:
        fields["lora_config"] = network.lora_config.model_dump(mode="json", exclude_none=True)
    return fields


#: Fields of a manifest holding paths relative to it: (section, field).
PATH_FIELDS = (
    ("network", "pretrained_model_name_or_path"),
    ("algorithm", "pretrained_model_name_or_path"),
    ("environment", "dataset"),
    ("environment", "reward_file_path"),
)


def llm_written_manifest(trainer: Any, doc: dict[str, Any]) -> None:
    """The manifest a run writes into its output directory: its paths absolute (they
    were relative to the original manifest), and the algorithm fields the network
    section fills (:func:`llm_spec_fields`) left to it again, unless the manifest set
    them."""
    for key in llm_spec_fields(trainer):
        if key not in trainer.algorithm.model_fields_set:
            doc["algorithm"].pop(key, None)
    for section, key in PATH_FIELDS:
        value = (doc.get(section) or {}).get(key)
        if isinstance(value, str):
            doc[section][key] = str(_resolved(trainer, value))


class BaseCompute:
    """What an LLM agent's forward passes run, for the thread choice: the shared base
    model with the adapter (the agent's own networks are its adapter alone)."""

    def __init__(self, trainer: Any, agent: Any) -> None:
        self.parameters = [*shared_base(trainer).model.parameters()]
        self.parameters += [*agent.network_parameters()]

    def network_parameters(self) -> list[Any]:
        return self.parameters


class SharedBaseLoader:
    """Rebuilds saved LLM agents (a run checkpoint's) on the run's shared base model:
    what :func:`~agilerl.training.run_checkpoint.restore` calls ``from_state_dict`` on."""

    def __init__(self, trainer: Any, env: Any) -> None:
        self.algo_cls = trainer.algorithm.algo_class()
        self.runtime = llm_build_args(trainer, env, 0)

    def from_state_dict(self, state: Any, device: Any = "cpu", where: str = "") -> Any:
        return self.algo_cls.from_state_dict(state, device=device, where=where, **self.runtime)
