"""The multi-agent family's pre-flight: settings that do not apply to a team, the replay
buffer against the batch, then what the run allocates (one parallel environment and one
team, on the meta device) against the memory this machine has."""

from __future__ import annotations

from types import SimpleNamespace

from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.multi_agent.buffers import MultiAgentReplayBuffer
from agilerl.families.multi_agent.envs import make_parallel_env
from agilerl.families.multi_agent.loops import TEAM_REPLAYS
from agilerl.families.python_env import close_made
from agilerl.training.cohorting import Cohorting, shares_cohorts
from agilerl.training.preflight import (
    ROLLOUT_EXTRA_BYTES,
    TRANSITION_EXTRA_BYTES,
    WORKER_PROCESS_BYTES,
    Estimate,
    Need,
    PreflightError,
    agent_bytes,
    check_batch,
    check_fits,
    default_buffer,
    environments_need,
    meta_agent,
    population_need,
    refuse_unused,
    replay_cohort_need,
    sample_bytes,
    size_text,
    traced_bytes,
)

#: Single-agent settings a multi-agent run has no use for: field -> why.
MULTI_AGENT_UNUSED = {
    "training.warmup_actions": "multi-agent teams act with their own exploration until "
    "they learn (uniform warm-up actions are implemented for single-agent off-policy "
    "agents)",
    "replay_buffer.per_buffer": "prioritised replay is not implemented for multi-agent teams",
    "replay_buffer.n_step_buffer": "n-step returns are not implemented for multi-agent teams",
    "training.eps_start": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
    "training.eps_end": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
    "training.eps_decay": "multi-agent teams explore with their own noise or sampling, not "
    "epsilon-greedy",
}


def check_multi_agent_run(ctx: RunContext, available: int | None = None) -> Estimate:
    """The multi-agent family's checks: settings that do not apply to a team, the replay
    buffer against the batch size, then the memory estimate against what this machine
    has (``available``)."""
    problems = refuse_unused(ctx, MULTI_AGENT_UNUSED)
    if problems:
        raise PreflightError("; ".join(problems))
    check_batch(ctx)
    return check_fits(estimate_multi_agent(ctx), available)


def team_cohorting(ctx: RunContext) -> Cohorting:
    """The run's :class:`~agilerl.training.cohorting.Cohorting`, as its turns state it
    (:mod:`.loops`): off-policy teams share a :class:`MultiAgentReplayBuffer`."""
    memory = MultiAgentReplayBuffer if ctx.algorithm.off_policy else None
    return run_cohorting(
        ctx.training.cohorts, ctx.environment, ctx.env_source, memory, TEAM_REPLAYS
    )


def estimate_multi_agent(ctx: RunContext) -> Estimate:
    """What a multi-agent run allocates: teams, environments, replay rows or rollouts
    (every agent's observation and action per row)."""
    algorithm, training, spec = ctx.algorithm, ctx.training, ctx.environment
    env, env_bytes = traced_bytes(lambda: make_parallel_env(spec, ctx.env_source))
    try:
        ids = list(env.possible_agents)
        obs_spaces = {a: env.observation_space(a) for a in ids}
        act_spaces = {a: env.action_space(a) for a in ids}
    finally:
        close_made(env, ctx.env_source)
    num_envs = spec.num_envs
    shim = SimpleNamespace(
        observation_spaces=obs_spaces, action_spaces=act_spaces, num_envs=num_envs
    )
    team = meta_agent(ctx, shim)
    obs = sum(sample_bytes(space) for space in obs_spaces.values())
    action = sum(sample_bytes(space) for space in act_spaces.values())
    per_team = agent_bytes(team)
    pop = training.pop_size
    per_env = env_bytes + 2 * obs + (0 if spec.sync else WORKER_PROCESS_BYTES)
    kind = "in this process" if spec.sync else "each in a worker process"
    holds = f"{len(ids)} agents in {len(team.groups)} groups"
    needs = [
        population_need(pop, per_team, "teams", holds),
        environments_need(num_envs, per_env, kind),
    ]
    if algorithm.off_policy:
        row = 2 * obs + action + len(ids) * (TRANSITION_EXTRA_BYTES + 1)  # + active
        size = ctx.replay_buffer.max_size if ctx.replay_buffer else default_buffer()
        needs.append(
            Need(
                "replay_buffer.max_size",
                f"{size:,} rows of every agent's transition ({size_text(row)})",
                size * row,
            )
        )
        needs.append(
            Need(
                "algorithm.batch_size",
                f"batches of {algorithm.batch_size:,} rows of {size_text(row)}",
                algorithm.batch_size * row,
            )
        )
        if shares_cohorts(team_cohorting(ctx), team, pop):
            needs.append(replay_cohort_need(ctx, num_envs, env_bytes + 2 * obs, size, row, "team"))
    else:
        steps = -(-team.learn_step // num_envs) * num_envs
        per_step = obs + action + len(ids) * (ROLLOUT_EXTRA_BYTES + 1)
        needs.append(
            Need(
                "algorithm.learn_step",
                f"rollouts of {steps:,} steps of every agent ({size_text(per_step)})",
                steps * per_step,  # one team trains at a time
            )
        )
        if shares_cohorts(team_cohorting(ctx), team, pop):
            # A cohort of teams steps a copy of the environments per team, in this
            # process, and holds every team's rollout at once.
            needs.append(
                Need(
                    "training.cohorts",
                    f"{pop:,} x {num_envs:,} environment copies stepped together in this "
                    f"process, and {pop - 1:,} more teams' rollouts held at once",
                    pop * num_envs * (env_bytes + 2 * obs) + (pop - 1) * steps * per_step,
                )
            )
    return Estimate(needs)
