"""Setting up an LLM run (the pieces :class:`~agilerl.families.llm.family.LLMFamily` uses).

The run loads the tokenizer and the base model ONCE (:func:`shared_base`) and gives that
one model to every agent (``actor_network``): the population shares the frozen base and
each agent adds its own LoRA adapter. Relative paths of the manifest (the model, the
dataset, the reward file) resolve against the manifest's directory (``ctx.base_dir``).
Nothing is downloaded: every file is local (:mod:`agilerl.llm.models`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.families.context import RunContext
from agilerl.training.errors import TrainerError


@dataclass
class Base:
    """The run's tokenizer and base model, shared by every agent."""

    tokenizer: Any
    model: Any


def model_location(ctx: RunContext) -> tuple[Path, str]:
    """The model directory (resolved against the manifest's directory) and the field that
    names it: the network section's, else the algorithm's own."""
    network = ctx.network
    if network is not None:
        raw, field = network.pretrained_model_name_or_path, "network.pretrained_model_name_or_path"
    else:
        raw = ctx.algorithm.pretrained_model_name_or_path
        field = "algorithm.pretrained_model_name_or_path"
    if raw is None:
        raise TrainerError(
            "network.pretrained_model_name_or_path: required: the local directory of the "
            "pretrained model to fine-tune"
        )
    return _resolved(ctx, raw), field


def _resolved(ctx: RunContext, raw: str) -> Path:
    """``raw`` resolved against the manifest's directory."""
    return (ctx.base_dir / Path(raw).expanduser()).resolve()


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
    """Algorithm fields the network section fills: the model directory (resolved) and
    the LoRA settings, where the algorithm section leaves them unset."""
    path, _ = model_location(ctx)
    fields: dict[str, Any] = {"pretrained_model_name_or_path": str(path)}
    network = ctx.network
    if ctx.algorithm.lora_config is None and network is not None and network.lora_config:
        fields["lora_config"] = network.lora_config.model_dump(mode="json", exclude_none=True)
    return fields


#: Fields of a manifest holding paths relative to it: (section, field).
PATH_FIELDS = (
    ("network", "pretrained_model_name_or_path"),
    ("algorithm", "pretrained_model_name_or_path"),
    ("environment", "dataset"),
    ("environment", "reward_file_path"),
)


def llm_written_manifest(ctx: RunContext, doc: dict[str, Any]) -> None:
    """The manifest a run writes into its output directory: its paths absolute (they
    were relative to the original manifest), and the algorithm fields the network
    section fills (:func:`llm_spec_fields`) left to it again, unless the manifest set
    them."""
    for key in llm_spec_fields(ctx):
        if key not in ctx.algorithm.model_fields_set:
            doc["algorithm"].pop(key, None)
    for section, key in PATH_FIELDS:
        value = (doc.get(section) or {}).get(key)
        if isinstance(value, str):
            doc[section][key] = str(_resolved(ctx, value))


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
