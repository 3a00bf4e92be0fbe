"""The LLM family's pre-flight: fields the machine cannot honour, settings and mutations
that do not apply to fine-tuning, the model's size (from its config.json, before it is
loaded: :mod:`.sizing`) against the memory available, then the model, dataset and reward
function (loaded here; the run reuses them). The work the run asks for is bounded by
:func:`agilerl.families.llm.sizing.llm_work` (``LLMFamily.work``)."""

from __future__ import annotations

from typing import Any

from agilerl.algorithms.core.llm import refusals
from agilerl.families.context import RunContext
from agilerl.families.llm.setup import model_location
from agilerl.families.llm.sizing import estimate_llm, model_size
from agilerl.training.errors import TrainerError
from agilerl.training.preflight import Estimate, PreflightError, check_fits, refuse_unused

#: Mutation kinds that change a network's architecture or weights: an LLM agent trains a
#: LoRA adapter on a frozen pretrained model, so none of them can apply.
ARCHITECTURE_MUTATIONS = {
    "arch_mut": "architecture mutations",
    "params_mut": "weight-noise mutations",
    "act_mut": "activation mutations",
}


#: Training settings of RL loops that an LLM run has no use for: refused, not ignored.
LLM_UNUSED = {
    "training.warmup_actions": "LLM agents learn from their first batch",
    "training.learning_delay": "LLM agents learn from their first batch",
    "training.eval_steps": "LLM agents are evaluated on the whole test split "
    "(training.eval_loop passes)",
    **{
        f"training.{name}": "LLM agents explore by sampling (algorithm.temperature), not "
        "epsilon-greedy"
        for name in ("eps_start", "eps_end", "eps_decay")
    },
}


def check_llm_run(ctx: RunContext, family: Any, available: int | None = None) -> Estimate | None:
    """The LLM family's checks, before any step: fields the machine cannot honour
    (:func:`agilerl.algorithms.core.llm.refusals`), mutations that cannot apply, then the
    model's size from its ``config.json`` against the memory this machine has
    (``available``), before the model is loaded, then the model directory, the dataset
    and the reward file and function (loaded here; the run reuses the model). Returns the
    memory estimate where the config gives the model's shape."""
    problems = [f"algorithm.{why}" for why in refusals(ctx.algorithm, ctx.device)]
    problems += refuse_unused(ctx, LLM_UNUSED)
    if ctx.replay_buffer is not None:
        problems.append(
            "replay_buffer: LLM agents learn from fresh batches of their dataset, not from a "
            "replay buffer; remove the section"
        )
    if ctx.evolving:
        probabilities = ctx.mutation.probabilities
        problems += [
            f"mutation.probabilities.{name}: {getattr(probabilities, name)} > 0, but an LLM "
            f"agent fine-tunes a LoRA adapter on a fixed pretrained model, so {what} do not "
            "apply; set it to 0 (rl_hp_mut mutates lr, beta, group_size)"
            for name, what in ARCHITECTURE_MUTATIONS.items()
            if getattr(probabilities, name) > 0
        ]
    if problems:
        raise PreflightError("; ".join(problems))
    try:
        directory, field = model_location(ctx)
        size = model_size(directory, field)
        found = None if size is None else check_fits(estimate_llm(ctx, size, field), available)
        env = family.make_env(ctx)  # loads the model, dataset and reward fn
    except TrainerError as err:
        raise PreflightError(str(err)) from None
    family.close_env(env)
    return found
