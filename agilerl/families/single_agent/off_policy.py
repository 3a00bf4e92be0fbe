"""The off-policy turn (DQN-style agents sharing one replay buffer) and
``train_off_policy``, AgileRL's entry point for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from typing_extensions import Unpack

from agilerl.algorithms.core.exploration import EpsilonGreedy
from agilerl.algorithms.core.rl_algorithm import action_mask_from_info
from agilerl.cohorts.learners import ReplayCohort
from agilerl.cohorts.replay import LOCKSTEP_REPLAYS, LockstepReplay
from agilerl.components.exploration import EPS_DECAY, EPS_END, EPS_START, EpsilonSchedule
from agilerl.components.observations import replace_rows
from agilerl.components.replay import Replay
from agilerl.families.base import Memory
from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.cohort_envs import CohortEnv, CohortEnvs, OwnEnv
from agilerl.families.single_agent.scoring import Scoring
from agilerl.training.cohorting import trains_in_cohorts
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Trained,
    Turns,
    closing,
    evolve,
    reset_seed,
    run_config,
    vector_steps,
)
from agilerl.training.rounds import LearningRounds
from agilerl.training.sharing import ExperienceSharing
from agilerl.training.state import turn_generators
from agilerl.training.tracking import MeanMetrics

#: The values of ``training.warmup_actions``: how an agent acts until it starts learning.
WARMUP_ACTIONS = ("policy", "uniform")


def with_final_obs(next_obs: Any, info: dict[str, Any]) -> Any:
    """``next_obs`` with the true last observation of every episode that just ended
    (same-step autoreset put the next episode's first observation there)."""
    ended = info.get("_final_obs")
    if ended is None or not np.any(ended):
        return next_obs
    rows = np.flatnonzero(ended)
    return replace_rows(next_obs, rows, [info["final_obs"][i] for i in rows])


def off_policy_turns(
    env: Any,
    memory: Any,
    pop: list[Any],
    *,
    n_step_memory: Any = None,
    max_steps: int = 1_000_000,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    learning_delay: int = 0,
    warmup_actions: str = "policy",
    eps_start: float = EPS_START,
    eps_end: float = EPS_END,
    eps_decay: float = EPS_DECAY,
    env_spec: Any = None,
    source: PythonEnv | None = None,
    cohorts: bool = True,
    scoring: Scoring | None = None,
) -> Turns:
    """Each agent in turn explores (:meth:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm.explore`:
    the agent's own exploration; epsilon-greedy agents follow the run's schedule
    ``eps_start`` -> ``eps_end``, decayed by ``eps_decay`` per vector step of the agent's
    steps, so it carries across generations) for its ``evo_steps`` share, storing every
    transition in the shared ``memory`` and learning every ``learn_step`` env steps once
    the buffer holds a batch and more than ``learning_delay`` steps
    (:class:`~agilerl.training.rounds.LearningRounds`); until then it acts
    with its own exploration (``warmup_actions="policy"``) or uniformly at random from
    its own generator (``"uniform"``, :meth:`~agilerl.algorithms.core.rl_algorithm.
    RLAlgorithm.uniform_actions`: Stable-Baselines3's and CleanRL's warm-up before
    ``learning_starts``). The sharing is
    generation-synchronous (:mod:`agilerl.training.sharing`): an agent learns from the
    buffer as the generation found it plus its own transitions; every agent's are added,
    in slot order, when the generation ends.
    The agent is told where episodes ended (``episodes_ended``), so per-env exploration
    state restarts there. ``done`` is stored as *terminated*: a time-limit cut bootstraps.
    ``memory`` may be prioritised (a ``PrioritizedReplayBuffer``: Rainbow's ``beta``
    anneals to 1 over ``max_steps``) and ``n_step_memory`` an ``NStepReplayBuffer``
    filled beside it; :class:`~agilerl.components.replay.Replay` stores the steps and draws
    the batches (an agent that cannot learn from them is refused before it trains).

    Where :mod:`~agilerl.training.cohorting` lets them (``cohorts``; copies of ``env``
    made from ``env_spec``, the environment section ``env`` was built from, and from
    ``source``, the environment given in Python; a ``memory`` of a class
    :data:`~agilerl.cohorts.replay.LOCKSTEP_REPLAYS` serves), agents of one cohort
    (:mod:`agilerl.cohorts`) train together, each as it would alone: one turn for P
    agents, whose parts (:class:`TurnParts`) are chosen by P once at its start. Agents
    are evaluated where ``scoring`` says (:mod:`.scoring`; default: on ``env``).
    """
    scoring = scoring or Scoring(env)
    replay = Replay.of(memory, n_step_memory, max_steps)
    for agent in pop:
        replay.check(agent)
    num_envs = env.num_envs
    schedule = EpsilonSchedule(eps_start, eps_end, eps_decay)
    if warmup_actions not in WARMUP_ACTIONS:
        raise ValueError(f"warmup_actions must be one of {WARMUP_ACTIONS}, got {warmup_actions!r}")
    uniform_warmup = warmup_actions == "uniform"

    sharing = ExperienceSharing(memory, n_step_memory)
    cohorting = run_cohorting(cohorts, env_spec, source, type(memory), LOCKSTEP_REPLAYS)
    cohort_envs = CohortEnvs(env_spec, source) if trains_in_cohorts(cohorting) else None

    def parts_of(agents: list[Any], slots: list[int], run: RunState, rows: int) -> TurnParts:
        """The one place where a turn's parts follow from its number of agents."""
        if len(agents) == 1:
            # The agent on the run's env, acting as itself and learning from the shared
            # buffers themselves (Replay; batches drawn by torch's global generator, which
            # the loop seeds for its turn) inside its turn of the sharing, which undoes its
            # writes and keeps them as its journal. The cohort's parts with one agent's
            # (the run's env, Population.of(agent), [torch.default_generator], a lockstep
            # view of one) give the same histories bit for bit, but serve only algorithms
            # with a population update and buffers LOCKSTEP_REPLAYS has a view of; an
            # agent alone may be any agent with explore and learn (a user's algorithm) on
            # any buffer REPLAYS serves (frame storage).
            agent, slot = agents[0], slots[0]
            sharing.begin_turn(slot)

            def act(obs: Any, mask: Any, uniform: np.ndarray) -> np.ndarray:
                return (agent.uniform_actions if uniform[0] else agent.explore)(obs, mask)

            return TurnParts(
                OwnEnv(env),
                replay,
                act,
                lambda live: [replay.learn(agent) if live[0] else None],
                lambda: sharing.end_turn(slot),
            )
        # The cohort's copies of the environment, the algorithm's act and update on the
        # stacked view of its agents, and each agent's view of the shared buffers (only
        # read), its batches drawn by its own generator, seeded as its own turn seeds
        # torch's: what an agent draws and sees does not depend on the other agents of its
        # cohort, and its view keeps the journal its own turn would have kept. Cohorts of
        # more than one are formed only where cohort_envs was built (run_cohorting).
        assert cohort_envs is not None
        generators = turn_generators(run, slots)
        learner = ReplayCohort(agents)
        views = LOCKSTEP_REPLAYS[type(memory)](
            memory, n_step_memory, agents, rows=rows, max_steps=max_steps
        )
        sizes = [int(agent.batch_size) for agent in agents]

        def finish() -> None:
            learner.write_back()
            for slot, journals in zip(slots, views.journals(), strict=True):
                sharing.record(slot, journals)

        return TurnParts(
            cohort_envs.take(len(agents)),
            views,
            learner.explore,
            lambda live: views.learn(learner, sizes, generators, live),
            finish,
        )

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        count = len(agents)
        n_steps = vector_steps(budget, num_envs)
        rows = n_steps * num_envs
        parts = parts_of(agents, slots, run, rows)
        turn_env = parts.env
        obs, info = turn_env.reset_each([reset_seed(run, slot, 0) for slot in slots])
        # The run's schedule goes to the epsilon-greedy agents; the others explore their
        # own way (action noise, noisy networks).
        for greedy in (agent for agent in agents if isinstance(agent, EpsilonGreedy)):
            greedy.configure_exploration(schedule)
        for agent in agents:
            agent.episodes_ended(np.ones(num_envs, dtype=bool))  # every env starts an episode
        returns = np.zeros((count, num_envs))
        completed: list[list[float]] = [[] for _ in agents]
        metrics = [MeanMetrics() for _ in agents]
        rounds = LearningRounds(agents, num_envs, learning_delay)

        replay = parts.replay
        for _ in range(n_steps):
            uniform = ~rounds.learning(len(replay)) & uniform_warmup  # all False without it
            actions = parts.act(obs, action_mask_from_info(info), uniform)
            next_obs, reward, terminated, truncated, info = turn_env.step(actions)
            replay.add(obs, actions, reward, with_final_obs(next_obs, info), terminated, truncated)
            returns += np.reshape(reward, (count, num_envs))
            ended = np.reshape(terminated | truncated, (count, num_envs))
            for p, agent in enumerate(agents):
                agent.steps += num_envs
                if ended[p].any():
                    completed[p].extend(returns[p][ended[p]].tolist())
                    returns[p][ended[p]] = 0.0
                    agent.episodes_ended(ended[p])
            obs = next_obs
            for live in rounds.after_step(len(replay)):
                for p, figures in enumerate(parts.learn(live)):
                    if figures is not None:
                        metrics[p].add(figures)
        replay.end_turn()  # the next turn (or the evaluation) resets the environment
        parts.finish()
        results = []
        for p, agent in enumerate(agents):
            agent.scores.extend(completed[p])
            # The exploration the generation ended with (e.g. DQN's epsilon).
            exploration = agent.exploration_metrics()
            results.append((rows, completed[p], {**metrics[p].means(), **exploration}))
        return results

    close = scoring.close
    if cohort_envs is not None:
        close = closing(cohort_envs.close, scoring.close)
    return Turns(
        train,
        scoring.evaluation(eval_steps, eval_loop, cohort_envs),
        sharing=sharing,
        cohorting=cohorting,
        close=close,
    )


def run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of a run the trainer sets up (:meth:`~agilerl.families.base.Family.turns`):
    :func:`off_policy_turns` with the run's training section, its replay buffers and
    its environment (section and Python source)."""
    training = ctx.training
    exploration = {
        name: value
        for name in ("eps_start", "eps_end", "eps_decay")
        if (value := getattr(training, name)) is not None
    }
    return off_policy_turns(
        env,
        memory.replay,
        population,
        n_step_memory=memory.n_step,
        max_steps=training.max_steps,
        eval_steps=training.eval_steps,
        eval_loop=training.eval_loop,
        learning_delay=training.learning_delay,
        warmup_actions=training.warmup_actions,
        env_spec=ctx.environment,
        source=ctx.env_source,
        cohorts=training.cohorts,
        scoring=Scoring(env, ctx.environment, ctx.env_source),
        **exploration,
    )


@dataclass(frozen=True)
class TurnParts:
    """What of an off-policy turn (:func:`off_policy_turns`) depends on its number of
    agents, P, chosen once at the turn's start."""

    #: The vector env its agents step (agent ``p``'s the ``p``-th block of every step's
    #: rows): the run's own for an agent alone, the cohort's copies together.
    env: CohortEnv
    #: Where the agents' transitions go (its length: the rows each agent's view holds).
    replay: Replay | LockstepReplay
    #: ``act(obs, mask, uniform)``: every agent's exploration on its block (uniform
    #: actions where ``uniform[p]``).
    act: Callable[[Any, Any, np.ndarray], np.ndarray]
    #: ``learn(live)``: one learning round of the agents ``live`` names; what each reported.
    learn: Callable[[np.ndarray], list[dict[str, float] | None]]
    #: After the replay's ``end_turn``: every agent's journal to the run's sharing.
    finish: Callable[[], None]


def train_off_policy(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: Any,
    *,
    learning_delay: int = 0,
    warmup_actions: str = "policy",
    eps_start: float = EPS_START,
    eps_end: float = EPS_END,
    eps_decay: float = EPS_DECAY,
    n_step_memory: Any = None,
    env_spec: Any = None,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population of off-policy agents on a vectorised ``env`` sharing one replay
    buffer (:func:`off_policy_turns`), with evolution when ``selection_strategy`` and
    ``mutation`` are given. The other keyword arguments (budget, evaluation, checkpoints,
    resuming) are :class:`~agilerl.training.evolution.LoopArguments`; run checkpoints
    save ``memory`` and ``n_step_memory`` beside the population.
    With ``env_spec`` (the :class:`~agilerl.models.env.GymEnvSpec` ``env`` was built
    from), agents that share an architecture train as cohorts (``cohorts=False`` in the
    loop arguments: one at a time), stepping a vector env of the same spec with a copy
    per agent and environment.
    Returns ``(population, fitnesses)``.
    """
    config = run_config(algo, env_name, loop, memory=memory, n_step_memory=n_step_memory)
    cohorts = loop.get("cohorts", True)
    turns = off_policy_turns(
        env,
        memory,
        pop,
        n_step_memory=n_step_memory,
        max_steps=config.max_steps,
        eval_steps=loop.get("eval_steps"),
        eval_loop=loop.get("eval_loop", 1),
        learning_delay=learning_delay,
        warmup_actions=warmup_actions,
        eps_start=eps_start,
        eps_end=eps_end,
        eps_decay=eps_decay,
        env_spec=env_spec,
        cohorts=cohorts,
        scoring=Scoring(env, env_spec),
    )
    return evolve(pop, turns, config)
