"""Setting up an LLM run (the pieces :class:`~agilerl.families.llm.family.LLMFamily` uses).

The run loads the tokenizer and the base model ONCE (:func:`shared_base`) and gives that
one model to every agent (``actor_network``): the population shares the frozen base and
each agent adds its own LoRA adapter. Relative paths of the manifest (the model, the
dataset, the reward file) resolve against the manifest's directory (``ctx.base_dir``);
the model and the dataset may instead be Hugging Face hub ids (:mod:`agilerl.llm.hub`),
which stay ids in what the run records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.families.context import RunContext
from agilerl.llm.hub import DATA_FILE_BUILDERS, hub_id, local_path
from agilerl.training.errors import TrainerError


@dataclass
class Base:
    """The run's tokenizer and base model, shared by every agent."""

    tokenizer: Any
    model: Any


def model_location(ctx: RunContext) -> tuple[Path, str]:
    """The model's local folder and the field that names it: the path (resolved against
    the manifest's directory) or a hub id's folder in the hub cache, resolved once per
    run."""
    raw, field = model_name(ctx)
    from agilerl.llm.models import LLMSetupError, model_directory

    try:
        directory = ctx.cached(
            "llm_model_directory", lambda: model_directory(raw, field, ctx.base_dir)
        )
    except LLMSetupError as err:
        raise TrainerError(str(err)) from None
    return directory, field


def model_name(ctx: RunContext) -> tuple[str, str]:
    """The model as the manifest names it, and the field: the network section's, else
    the algorithm's own."""
    network = ctx.network
    if network is not None:
        raw, field = network.pretrained_model_name_or_path, "network.pretrained_model_name_or_path"
    else:
        raw = ctx.algorithm.pretrained_model_name_or_path
        field = "algorithm.pretrained_model_name_or_path"
    if raw is None:
        raise TrainerError(
            "network.pretrained_model_name_or_path: required: the pretrained model to "
            "fine-tune (a local directory or a Hugging Face hub id)"
        )
    return raw, field


def _recorded(ctx: RunContext, raw: str, hub_suffixes: tuple[str, ...] | None) -> str:
    """``raw`` as a run records it: a local path absolute (resolved against the manifest's
    directory), a hub id as written. ``hub_suffixes``: the file suffixes that make a name
    local (:func:`agilerl.llm.hub.hub_id`); None for a field that is always a path."""
    if hub_suffixes is not None and hub_id(raw, ctx.base_dir, hub_suffixes) is not None:
        return raw
    return str(local_path(raw, ctx.base_dir).resolve())


def shared_base(ctx: RunContext) -> Base:
    """The run's tokenizer and base model, loaded on first use and kept in the run context's cache
    (the pre-flight loads them; the run uses the same ones)."""
    return ctx.cached("llm_base", lambda: _load_base(ctx))


def _load_base(ctx: RunContext) -> Base:
    from agilerl.llm.models import LLMSetupError, load_causal_lm, load_tokenizer

    path, field = model_location(ctx)
    try:
        tokenizer = load_tokenizer(path, field=field)
        model = load_causal_lm(
            path, field=field, attn_implementation=ctx.algorithm.attn_implementation
        )
    except LLMSetupError as err:
        raise TrainerError(str(err)) from None
    return Base(tokenizer, model)


def make_llm_env(ctx: RunContext) -> Any:
    """The run's environment (:func:`agilerl.families.llm.environments.build_llm_env`): batches
    of ``algorithm.batch_size`` prompts, at most ``network.max_context_length`` tokens,
    shuffled with the run's seed."""
    from agilerl.distributed.launcher import launched_world_size
    from agilerl.families.llm.environments import build_llm_env
    from agilerl.llm.data_parallel import check_divisible, launch_refusals
    from agilerl.llm.models import LLMSetupError

    # A data-parallel run (several processes) splits every batch over them.
    problems = launch_refusals()
    try:
        check_divisible(ctx.algorithm.batch_size, launched_world_size(), "algorithm.batch_size")
    except ValueError as err:
        problems.append(str(err))
    if problems:
        raise TrainerError("; ".join(problems))
    network = ctx.network
    try:
        return build_llm_env(
            ctx.environment,
            shared_base(ctx).tokenizer,
            batch_size=ctx.algorithm.batch_size,
            max_context_length=None if network is None else network.max_context_length,
            seed=ctx.training.seed if ctx.training.seed is not None else 0,
            base_dir=ctx.base_dir,
        )
    except LLMSetupError as err:
        raise TrainerError(str(err)) from None


def llm_build_args(ctx: RunContext, env: Any, seed: int) -> dict[str, Any]:
    """``build_algorithm``'s runtime arguments: the shared tokenizer and base model (the
    agent's own ``seed`` field seeds it)."""
    base = shared_base(ctx)
    return {"tokenizer": base.tokenizer, "actor_network": base.model}


def llm_spec_fields(ctx: RunContext) -> dict[str, Any]:
    """Algorithm fields the network section fills: the model (a path made absolute, a hub
    id as written) and the LoRA settings, where the algorithm section leaves them unset."""
    raw, _ = model_name(ctx)
    fields: dict[str, Any] = {"pretrained_model_name_or_path": _recorded(ctx, raw, ())}
    network = ctx.network
    if ctx.algorithm.lora_config is None and network is not None and network.lora_config:
        fields["lora_config"] = network.lora_config.model_dump(mode="json", exclude_none=True)
    return fields


#: Fields of a manifest holding paths relative to it: (section, field) -> the file
#: suffixes that make a name local where it may be a hub id, None where it is a path.
PATH_FIELDS: dict[tuple[str, str], tuple[str, ...] | None] = {
    ("network", "pretrained_model_name_or_path"): (),
    ("algorithm", "pretrained_model_name_or_path"): (),
    ("environment", "dataset"): tuple(DATA_FILE_BUILDERS),
    ("environment", "reward_file_path"): None,
}


def llm_written_manifest(ctx: RunContext, doc: dict[str, Any]) -> None:
    """The manifest a run writes into its output directory: its paths absolute (they
    were relative to the original manifest), and the algorithm fields the network
    section fills (:func:`llm_spec_fields`) left to it again, unless the manifest set
    them."""
    for key in llm_spec_fields(ctx):
        if key not in ctx.algorithm.model_fields_set:
            doc["algorithm"].pop(key, None)
    for (section, key), hub_suffixes in PATH_FIELDS.items():
        value = (doc.get(section) or {}).get(key)
        if isinstance(value, str):
            doc[section][key] = _recorded(ctx, value, hub_suffixes)


class BaseCompute:
    """What an LLM agent's forward passes run, for the thread choice: the shared base
    model with the adapter (the agent's own networks are its adapter alone)."""

    def __init__(self, ctx: RunContext, agent: Any) -> None:
        self.parameters = [*shared_base(ctx).model.parameters()]
        self.parameters += [*agent.network_parameters()]

    def network_parameters(self) -> list[Any]:
        return self.parameters


class SharedBaseLoader:
    """Rebuilds saved LLM agents (a run checkpoint's) on the run's shared base model:
    what :func:`~agilerl.training.run_checkpoint.restore` calls ``from_state_dict`` on."""

    def __init__(self, ctx: RunContext, env: Any) -> None:
        self.algo_cls = ctx.algorithm.algo_class()
        self.runtime = llm_build_args(ctx, env, 0)

    def from_state_dict(self, state: Any, device: Any = "cpu", where: str = "") -> Any:
        return self.algo_cls.from_state_dict(state, device=device, where=where, **self.runtime)
