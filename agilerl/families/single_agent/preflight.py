"""The single-agent family's pre-flight: the replay buffer against the batch, then
what the run allocates (one environment and one agent, on the meta device, are built to
learn the spaces and the size of an agent) against the memory this machine has. The one
environment, where it is the user's (an entry point), goes through Gymnasium's
environment checker first (:mod:`.env_check`)."""

from __future__ import annotations

from types import SimpleNamespace

from agilerl.cohorts.replay import LOCKSTEP_REPLAYS
from agilerl.components.prioritized_replay import PrioritizedReplayBuffer
from agilerl.components.replay import STORAGES
from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.python_env import close_made
from agilerl.families.single_agent.env_check import report_user_env, report_user_env_in_worker
from agilerl.families.single_agent.envs import make_env
from agilerl.families.single_agent.vectorize import VectorizeError, resolve_vectorize
from agilerl.hpo.selections import selection_class
from agilerl.models.base import AlgorithmNotAvailableError
from agilerl.models.training import ReplayBufferSpec
from agilerl.training.cohorting import Cohorting, shares_cohorts
from agilerl.training.preflight import (
    N_STEP_EXTRA_BYTES,
    PRIORITY_BYTES,
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
    replay_cohort_need,
    sample_bytes,
    size_text,
    traced_bytes,
)


def check_rl_run(ctx: RunContext, available: int | None = None) -> Estimate:
    """The single-agent family's checks: the replay buffer against the batch size, then
    the memory estimate against what this machine has (``available``)."""
    check_batch(ctx)
    return check_fits(estimate(ctx), available)


def replay_class(spec: ReplayBufferSpec | None) -> type:
    """The class of the main buffer a ``replay_buffer`` section builds
    (:func:`~agilerl.components.replay.build_replay_buffers`), without building it."""
    spec = spec or ReplayBufferSpec()
    return PrioritizedReplayBuffer if spec.per_buffer else STORAGES[spec.storage]


def online_cohorting(ctx: RunContext) -> Cohorting:
    """The run's :class:`~agilerl.training.cohorting.Cohorting`, as its turns state it
    (:mod:`.off_policy`, :mod:`.on_policy`): off-policy agents share the buffer the
    ``replay_buffer`` section builds, which a cohort serves where
    :data:`~agilerl.cohorts.replay.LOCKSTEP_REPLAYS` has a view of it."""
    memory = replay_class(ctx.replay_buffer) if ctx.algorithm.off_policy else None
    return run_cohorting(
        ctx.training.cohorts, ctx.environment, ctx.env_source, memory, LOCKSTEP_REPLAYS
    )


def estimate(ctx: RunContext, cohorting: Cohorting | None = None) -> Estimate:
    """What a single-agent run will allocate: population, environments and buffers
    (``cohorting``: whether its agents may share cohorts, :mod:`~agilerl.training.
    cohorting`; default the online run's, :func:`online_cohorting`)."""
    cohorting = cohorting or online_cohorting(ctx)
    algorithm, training, spec = ctx.algorithm, ctx.training, ctx.environment
    try:  # before anything is built
        vectorised = resolve_vectorize(spec)
    except VectorizeError as err:
        raise PreflightError(str(err)) from None
    env, env_bytes = traced_bytes(lambda: make_env(spec, ctx.env_source))
    try:
        obs_space, action_space = env.observation_space, env.action_space
        # The user's environment (given in Python, or an entry point; not a registered id),
        # checked below the engine's guard (UserEnv): its reset(**kwargs) would hide the
        # user's signature. A made copy the run never steps; an object given in Python is
        # the run's own, which resets it before its first step anyway.
        where = (
            f"env {ctx.env_source.label}"
            if ctx.env_source is not None
            else f"environment.entrypoint {spec.entrypoint}"
            if spec.entrypoint is not None
            else None
        )
        if where is not None:
            if vectorised.workers:  # checked where the run steps it: in a worker process
                report_user_env_in_worker(lambda: make_env(spec, ctx.env_source).env, where)
            else:
                report_user_env(env.env, where)
    finally:
        close_made(env, ctx.env_source)
    num_envs = spec.num_envs
    shim = SimpleNamespace(
        single_observation_space=obs_space, single_action_space=action_space, num_envs=num_envs
    )
    try:
        agent = meta_agent(ctx, shim)
    except NotImplementedError as err:  # a feature the engine lacks (recurrent PPO)
        if isinstance(err, AlgorithmNotAvailableError):
            raise
        raise PreflightError(f"algorithm: {err}") from None
    obs, action = sample_bytes(obs_space), sample_bytes(action_space)
    per_agent = agent_bytes(agent)
    pop = training.pop_size
    # a native environment's copies cost no more than separate ones (CartPole: less)
    per_env = env_bytes + 2 * obs + (WORKER_PROCESS_BYTES if vectorised.workers else 0)
    needs = [
        population_need(pop, per_agent, "agents", "networks, gradients, optimiser state"),
        environments_need(num_envs, per_env, vectorised.how),
    ]
    if ctx.evolving:
        need = selection_class(ctx.selection_strategy).working_memory(ctx.selection_strategy)
        if need is not None:
            needs.append(Need(*need))
    if algorithm.off_policy or algorithm.offline:
        transition = 2 * obs + action + TRANSITION_EXTRA_BYTES
        storage = STORAGES[ctx.replay_buffer.storage if ctx.replay_buffer else "transitions"]
        shape = tuple(getattr(obs_space, "shape", None) or ())
        stored = storage.observation_bytes(obs, shape) + action + TRANSITION_EXTRA_BYTES
        size = ctx.replay_buffer.max_size if ctx.replay_buffer else default_buffer()
        needs.append(
            Need(
                "replay_buffer.max_size",
                f"{size:,} transitions of {size_text(stored)}",
                size * stored,
            )
        )
        buffers = ctx.replay_buffer
        if buffers is not None and buffers.per_buffer:
            needs.append(
                Need(
                    "replay_buffer.per_buffer",
                    f"priorities of {size:,} slots ({PRIORITY_BYTES} B each, their sum tree "
                    "included)",
                    size * PRIORITY_BYTES,
                )
            )
        if buffers is not None and buffers.n_step_buffer:
            row = transition + N_STEP_EXTRA_BYTES
            needs.append(
                Need(
                    "replay_buffer.n_step_buffer",
                    f"an n-step buffer beside it: {size:,} transitions of {size_text(row)}",
                    size * row,
                )
            )
        needs.append(
            Need(
                "algorithm.batch_size",
                f"batches of {algorithm.batch_size:,} transitions of {size_text(transition)}",
                algorithm.batch_size * transition,
            )
        )
        if shares_cohorts(cohorting, agent, pop):
            per_copy = env_bytes + 2 * obs
            needs.append(replay_cohort_need(ctx, num_envs, per_copy, size, transition, "agent"))
    else:  # on-policy: a rollout of learn_step steps (whole vector steps) per agent
        steps = -(-agent.learn_step // num_envs) * num_envs
        per_step = obs + action + ROLLOUT_EXTRA_BYTES
        needs.append(
            Need(
                "algorithm.learn_step",
                f"rollouts of {steps:,} steps of {size_text(per_step)}, one per agent",
                pop * steps * per_step,
            )
        )
        if shares_cohorts(cohorting, agent, pop):
            # A cohort steps a copy of the environments per agent, in this process.
            needs.append(
                Need(
                    "training.cohorts",
                    f"{pop:,} x {num_envs:,} environment copies stepped together",
                    pop * num_envs * (env_bytes + 2 * obs),
                )
            )
    return Estimate(needs)
