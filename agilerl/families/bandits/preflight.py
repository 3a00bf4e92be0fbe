"""The bandit family's pre-flight: settings that do not apply to a bandit, the memory
against the batch, a target a reward rate cannot reach, the tables (loaded here), then
what the run allocates against the memory this machine has."""

from __future__ import annotations

from typing import Any

from agilerl.families.context import RunContext
from agilerl.training.errors import TrainerError
from agilerl.training.preflight import (
    Estimate,
    Need,
    PreflightError,
    agent_bytes,
    check_fits,
    default_buffer,
    meta_agent,
    population_need,
    refuse_unused,
    size_text,
)

#: Settings of the other RL loops a bandit run has no use for: field -> why.
BANDIT_UNUSED = {
    "training.warmup_actions": "bandit agents learn once the memory holds a batch, with no warm-up",
    "training.learning_delay": "bandit agents learn once the memory holds a batch",
    **{
        f"training.{name}": "bandit agents explore by their confidence bound or posterior "
        "samples (algorithm.gamma), not epsilon-greedy"
        for name in ("eps_start", "eps_end", "eps_decay")
    },
    "replay_buffer.per_buffer": "prioritised replay is not implemented for bandits",
    "replay_buffer.n_step_buffer": "a bandit step has no next state to take n steps from",
}


def check_bandit_run(ctx: RunContext, family: Any, available: int | None = None) -> Estimate:
    """The bandit family's checks, before any step: settings that do not apply to a
    bandit, the memory against the batch size, then the tables (loaded here: a missing
    file, row counts that differ or a value that is not a number is refused naming the
    file and row), then the memory estimate against what this machine has
    (``available``)."""
    problems = refuse_unused(ctx, BANDIT_UNUSED)
    size = ctx.replay_buffer.max_size if ctx.replay_buffer else default_buffer()
    if ctx.algorithm.batch_size > size:
        problems.append(
            f"algorithm.batch_size: {ctx.algorithm.batch_size:,} is more than "
            f"replay_buffer.max_size ({size:,}): the memory never holds a whole batch, so "
            "no agent would ever learn"
        )
    target = ctx.training.target_score
    if target is not None and target > 1:
        problems.append(
            f"training.target_score: {target} can never be reached: a bandit's fitness is "
            "its reward rate, 0 to 1 (AgileRL's is the reward summed over eval_steps "
            "pulls); give the rate, e.g. 0.9"
        )
    if problems:
        raise PreflightError("; ".join(problems))
    try:
        env = family.make_env(ctx)
    except TrainerError as err:
        raise PreflightError(str(err)) from None
    family.close_env(env)
    return check_fits(estimate_bandit(ctx, env, size), available)


def estimate_bandit(ctx: RunContext, env: Any, size: int) -> Estimate:
    """What a bandit run allocates: the population (built on the meta device) and the
    shared memory of ``size`` pulls (a context of float32 and a float32 reward each)."""
    agent = meta_agent(ctx, env)
    per_agent = agent_bytes(agent) + agent.sigma_inv.numel() * agent.sigma_inv.element_size()
    pop = ctx.training.pop_size
    pull = 4 * env.context_dim + 4
    return Estimate(
        [
            population_need(
                pop,
                per_agent,
                "agents",
                "networks, gradients, optimiser state, inverse design matrix",
            ),
            Need("replay_buffer.max_size", f"{size:,} pulls of {size_text(pull)}", size * pull),
        ]
    )
