"""The multi-agent training functions: MADDPG/MATD3 off-policy, IPPO on-policy.

Both run on a :class:`~agilerl.families.multi_agent.vector.ParallelVecEnv` through the generation
loop every family shares (:func:`~agilerl.training.evolution.evolve`: evolution,
checkpoints, resuming, the progress bar, the per-generation table and the plot). An agent
here is a *team*: one :class:`~agilerl.algorithms.core.multi_agent.MultiAgentRLAlgorithm`
acting for every agent of the environment.

Fitness, and every training score, is the team's summed return per episode (every
agent's rewards added) with ``sum_scores`` true, the default; with ``sum_scores`` false
it is the mean return per agent (the summed return over the number of agents). The
per-generation table shows beside it each agent group's summed return
(``fitness/<group>``).

The loop never chooses an action for an agent: it passes the team's own (``explore``) to
the environment, which hands each sub-environment the actions of the agents present in
it. Transitions of agents that were absent are stored with ``active`` false, and the
algorithms leave them out of every loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from typing_extensions import Unpack

from agilerl.cohorts.learners import LEARNERS
from agilerl.cohorts.replay import CohortReplay
from agilerl.cohorts.team_actor_critic import TeamActorCriticCohort
from agilerl.cohorts.team_policy import TeamPolicyCohort
from agilerl.components import on_policy
from agilerl.families.base import Memory
from agilerl.families.cohorting import run_cohorting
from agilerl.families.context import RunContext
from agilerl.families.multi_agent.buffers import (
    MA_FIELDS,
    MultiAgentReplayBuffer,
    MultiAgentRollout,
    TeamRolloutCollector,
    active_of,
    masks_of,
)
from agilerl.families.multi_agent.cohort_envs import TeamCohortEnvs
from agilerl.families.multi_agent.vector import FINAL
from agilerl.families.python_env import PythonEnv
from agilerl.training.cohorting import Cohorting, trains_in_cohorts
from agilerl.training.evaluation_cap import episode_steps, warn_if_cut
from agilerl.training.evolution import (
    LoopArguments,
    RunState,
    Turns,
    evolve,
    reset_seed,
    run_config,
    vector_steps,
)
from agilerl.training.paired import paired_evaluation, paired_turn
from agilerl.training.rounds import LearningRounds
from agilerl.training.sharing import ExperienceSharing
from agilerl.training.state import turn_generators
from agilerl.training.tracking import MeanMetrics

#: One agent's turn: (agent, slot, budget, run) -> (env steps, episode returns, metrics).
TrainTeam = Callable[[Any, int, int, RunState], tuple[int, list[float], dict[str, float]]]

#: The replay memories a cohort of off-policy teams has a view of
#: (:class:`~agilerl.cohorts.replay.CohortReplay`).
TEAM_REPLAYS = frozenset({MultiAgentReplayBuffer})


def _scale(sum_scores: bool, team: Any) -> float:
    """What one team return counts as: itself, or per agent (``sum_scores`` false)."""
    return 1.0 if sum_scores else 1.0 / len(team.agent_ids)


class _Returns:
    """Each sub-environment's running team return, and those of the episodes that ended."""

    def __init__(self, num_envs: int, scale: float) -> None:
        self.running = np.zeros(num_envs)
        self.completed: list[float] = []
        self.scale = scale

    def add(self, rewards: dict[str, np.ndarray], ended: np.ndarray) -> None:
        self.running += sum(np.asarray(r, dtype=float) for r in rewards.values())
        if ended.any():
            self.completed.extend((self.running[ended] * self.scale).tolist())
            self.running[ended] = 0.0


def team_evaluation(
    env: Any, eval_steps: int | None, eval_loop: int, sum_scores: bool
) -> Callable[[Any, int, RunState], tuple[float, int, dict[str, float]]]:
    """Evaluation of a team by ``agent.test`` on ``env`` (resets seeded from the run's
    generation and slot): the team's summed return per episode (or per agent, see the
    module docstring), with each group's summed return as ``fitness/<group>``; an episode
    runs ``eval_steps`` at most, or to the cap where that is unset
    (:mod:`~agilerl.training.evaluation_cap`)."""

    def evaluate(agent: Any, slot: int, state: RunState) -> tuple[float, int, dict[str, float]]:
        team = agent.test(
            env,
            max_steps=episode_steps(eval_steps),
            loop=eval_loop,
            seed=reset_seed(state, slot, 1),
        )
        warn_if_cut(agent.eval_cut, eval_steps, state)
        fitness = float(team) * _scale(sum_scores, agent)
        agent.fitness[-1] = fitness  # test appended the summed return
        groups = {f"fitness/{g}": float(v) for g, v in agent.group_fitness.items()}
        return fitness, agent.eval_steps_taken, groups

    return evaluate


def _team_turns(
    env: Any,
    pop: list[Any],
    train_agent: TrainTeam,
    train_cohort: Any,
    *,
    sum_scores: bool,
    eval_steps: int | None,
    eval_loop: int,
    sharing: Any = None,
    cohorting: Cohorting | None = None,
    close: Any = None,
) -> Turns:
    """A team family's turns: ``train_agent`` (and ``train_cohort``), evaluation by
    :func:`team_evaluation`, and each group's fitness in the per-generation table."""
    groups = sorted({g for team in pop for g in team.groups})
    return Turns(
        paired_turn(train_agent, train_cohort, sharing),
        paired_evaluation(team_evaluation(env, eval_steps, eval_loop, sum_scores), None),
        sharing=sharing,
        table_metrics=tuple(f"fitness/{g}" for g in groups),
        cohorting=cohorting or Cohorting(),
        close=close,
    )


def multi_agent_off_policy_turns(
    env: Any,
    memory: Any,
    pop: list[Any],
    *,
    sum_scores: bool = True,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    learning_delay: int = 0,
    env_spec: Any = None,
    source: PythonEnv | None = None,
    cohorts: bool = True,
) -> Turns:
    """The turns of off-policy teams (MADDPG, MATD3) on a vectorised parallel ``env``,
    sharing one :class:`~agilerl.families.multi_agent.buffers.MultiAgentReplayBuffer`
    (``memory``: every team's experience feeds every team, generation-synchronously: a
    team learns from the buffer as the generation found it plus its own rows; every team's
    rows are added, in slot order, when the generation ends; see
    :mod:`agilerl.training.sharing`).

    Each team in turn explores for its ``evo_steps`` share (its own noise, restarted per
    sub-environment where an episode ended), storing every vector step with the true
    next observations, ``done`` = terminated (a time-limit cut bootstraps) and the masks
    the environment gave (those acted within and those of the next observations), and
    learns from a sample of ``batch_size`` rows every ``learn_step`` env steps once the
    buffer holds a batch and more than ``learning_delay`` rows (:class:`~agilerl.training.
    rounds.LearningRounds`).

    Where :mod:`~agilerl.training.cohorting` lets them (``cohorts``; copies of ``env``
    made from ``env_spec``, the environment section ``env`` was built from, and from
    ``source``, the environment given in Python; a ``memory`` of
    :data:`TEAM_REPLAYS`), teams of one cohort (:mod:`agilerl.cohorts`) train together
    (:func:`team_replay_turn`).
    """
    num_envs = env.num_envs

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        obs, infos = env.reset(seed=reset_seed(run, slot, 0))
        agent.episodes_ended(np.ones(num_envs, dtype=bool))  # every env starts an episode
        returns = _Returns(num_envs, _scale(sum_scores, agent))
        metrics = MeanMetrics()
        rounds = LearningRounds([agent], num_envs, learning_delay)
        n_steps = vector_steps(budget, num_envs)
        for _ in range(n_steps):
            actions = agent.explore(obs, infos)
            step = env.step(actions)
            memory.add(*_transition(env.agent_ids, obs, infos, actions, step))
            next_obs, rewards, _, _, next_infos = step
            final = next_infos[FINAL]
            returns.add(rewards, final["ended"])
            if final["ended"].any():
                agent.episodes_ended(final["ended"])
            obs, infos = next_obs, next_infos
            agent.steps += num_envs
            for _ in rounds.after_step(len(memory)):
                metrics.add(agent.learn(memory.sample(agent.batch_size)))
        agent.scores.extend(returns.completed)
        return n_steps * num_envs, returns.completed, metrics.means()

    sharing = ExperienceSharing(memory)
    cohorting = run_cohorting(cohorts, env_spec, source, type(memory), TEAM_REPLAYS)
    if not trains_in_cohorts(cohorting):
        return _team_turns(
            env, pop, train_agent, None, sum_scores=sum_scores, eval_steps=eval_steps,
            eval_loop=eval_loop, sharing=sharing,
        )  # fmt: skip
    cohort_envs = TeamCohortEnvs(env_spec, source)
    return _team_turns(
        env, pop, train_agent,
        team_replay_turn(cohort_envs, memory, learning_delay, sum_scores),
        sum_scores=sum_scores, eval_steps=eval_steps, eval_loop=eval_loop, sharing=sharing,
        cohorting=cohorting, close=cohort_envs.close,
    )  # fmt: skip


def _transition(
    agent_ids: list[str], obs: Any, infos: Any, actions: Any, step: tuple[Any, ...]
) -> tuple[Any, ...]:
    """What a replay buffer stores of one vector step from ``obs``/``infos`` (``step``:
    what ``env.step(actions)`` returned), in the order of :data:`~agilerl.families.
    multi_agent.buffers.MA_FIELDS`: the true next observations, ``done`` = terminated
    (a time-limit cut bootstraps), each agent's activity, the masks acted within and
    those of the next observations."""
    _, rewards, terminated, _, next_infos = step
    final = next_infos[FINAL]
    return (
        obs, actions, rewards, final["obs"], terminated, active_of(next_infos, agent_ids),
        masks_of(infos, agent_ids), final["action_mask"],
    )  # fmt: skip


class _CohortTurn:
    """What a turn of a team cohort keeps besides its learner: the joined copies
    (``envs.take``: team ``p``'s the ``p``-th block of ``n``), reset with the seeds the
    teams' own turns would use, each team's episodes and returns in its block, and its
    learning metrics."""

    def __init__(
        self, envs: TeamCohortEnvs, agents: list[Any], slots: list[int], run: RunState,
        sum_scores: bool,
    ) -> None:  # fmt: skip
        self.agents = agents
        self.env = envs.take(len(agents))
        self.n = self.env.num_envs // len(agents)
        self.obs, self.infos = self.env.reset_each([reset_seed(run, slot, 0) for slot in slots])
        self.returns = [_Returns(self.n, _scale(sum_scores, agent)) for agent in agents]
        self.metrics = [MeanMetrics() for _ in agents]
        for agent in agents:
            agent.episodes_ended(np.ones(self.n, dtype=bool))  # every copy starts one

    def add(self, rewards: dict[str, np.ndarray], ended: np.ndarray) -> None:
        """A vector step's rewards and ended episodes, each team's from its block."""
        for p, agent in enumerate(self.agents):
            own = slice(p * self.n, (p + 1) * self.n)
            self.returns[p].add({a: r[own] for a, r in rewards.items()}, ended[own])
            if ended[own].any():
                agent.episodes_ended(ended[own])

    def learnt(self, figures: list[dict[str, float] | None]) -> None:
        """What each team reported of a learning call (None: it did not learn)."""
        for metrics, own in zip(self.metrics, figures, strict=True):
            if own is not None:
                metrics.add(own)

    def results(self, taken: int) -> list[tuple[int, list[float], dict[str, float]]]:
        """Each team's (steps, returns, metrics) of a turn of ``taken`` steps per team."""
        out = []
        for agent, returns, metrics in zip(self.agents, self.returns, self.metrics, strict=True):
            agent.steps += taken
            agent.scores.extend(returns.completed)
            out.append((taken, returns.completed, metrics.means()))
        return out


def team_replay_turn(
    envs: TeamCohortEnvs, memory: Any, learning_delay: int, sum_scores: bool
) -> Any:
    """The turn of a cohort of MADDPG or MATD3 teams (:class:`~agilerl.cohorts.
    team_actor_critic.TeamActorCriticCohort`): the teams step their own copies together
    (each block reset with the seed its team's own turn would use), act with one forward
    per group and step, and learn together from their views of the shared ``memory``
    (:class:`~agilerl.cohorts.replay.CohortReplay`: the generation's buffer plus each
    team's own rows), each every ``learn_step`` of its own env steps (:class:`~agilerl.
    training.rounds.LearningRounds`), on batches drawn by its own generator. Returns each
    team's (steps, returns, metrics) and journal."""

    def train_cohort(
        agents: list[Any], slots: list[int], budget: int, run: RunState
    ) -> tuple[list[tuple[int, list[float], dict[str, float]]], list[Any]]:
        turn = _CohortTurn(envs, agents, slots, run, sum_scores)
        env, n, obs, infos = turn.env, turn.n, turn.obs, turn.infos
        generators = turn_generators(run, slots)
        learner = cast(TeamActorCriticCohort, LEARNERS[type(agents[0])](agents))  # its kind
        n_steps = vector_steps(budget, n)
        view = CohortReplay(memory, len(agents), n_steps * n)
        rounds = LearningRounds(agents, n, learning_delay)
        sizes = [int(agent.batch_size) for agent in agents]
        for _ in range(n_steps):
            actions = learner.explore(obs, infos)
            step = env.step(actions)
            view.store(dict(zip(MA_FIELDS, _transition(env.agent_ids, obs, infos, actions, step),
                                strict=True)))  # fmt: skip
            obs, rewards, _, _, infos = step
            turn.add(rewards, infos[FINAL]["ended"])
            for live in rounds.after_step(len(view)):
                batch = view.rows(view.draw(sizes, generators, live))
                turn.learnt(learner.learn(batch, live, generators))
        learner.write_back()
        return turn.results(n_steps * n), [[journal] for journal in view.journals()]

    return train_cohort


def train_multi_agent_off_policy(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    memory: Any,
    *,
    sum_scores: bool = True,
    learning_delay: int = 0,
    env_spec: Any = None,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population of off-policy teams (MADDPG, MATD3) on a vectorised parallel
    ``env`` sharing ``memory`` (:func:`multi_agent_off_policy_turns`). With ``env_spec``
    (the :class:`~agilerl.models.env.PzEnvSpec` ``env`` was built from), teams that
    share an architecture train as cohorts (``cohorts=False`` in the loop arguments: one
    at a time), stepping copies of the same spec. The other keyword arguments are
    :class:`~agilerl.training.evolution.LoopArguments`; run checkpoints save ``memory``
    beside the population. Returns ``(population, fitnesses)``."""
    turns = multi_agent_off_policy_turns(
        env,
        memory,
        pop,
        sum_scores=sum_scores,
        eval_steps=loop.get("eval_steps"),
        eval_loop=loop.get("eval_loop", 1),
        learning_delay=learning_delay,
        env_spec=env_spec,
        cohorts=loop.get("cohorts", True),
    )
    return evolve(pop, turns, run_config(algo, env_name, loop, memory=memory))


def multi_agent_on_policy_turns(
    env: Any,
    pop: list[Any],
    *,
    sum_scores: bool = True,
    eval_steps: int | None = None,
    eval_loop: int = 1,
    env_spec: Any = None,
    source: PythonEnv | None = None,
    cohorts: bool = True,
) -> Turns:
    """The turns of on-policy teams (IPPO) on a vectorised parallel ``env``.

    Each team in turn collects rollouts of ``learn_step`` env steps (rounded up to whole
    vector steps) with :func:`~agilerl.components.on_policy.collect_rollout`, the
    collection PPO uses, into a :class:`~agilerl.families.multi_agent.buffers.
    MultiAgentRollout` (:class:`~agilerl.families.multi_agent.buffers.
    TeamRolloutCollector`: obs, action, the log-probability and value its ``explore``
    recorded, reward, done = terminated or truncated, active, the action masks acted
    within), and learns from each whole (GAE per agent, bootstrapped from the
    observations after the rollout), until its ``evo_steps`` share is used. Time-limit
    cuts are bootstrapped by adding ``gamma * V`` of the last observation to that step's
    reward (:func:`~agilerl.components.on_policy.bootstrap_time_limits`).

    Where :mod:`~agilerl.training.cohorting` lets them (``cohorts``; copies of ``env``
    made from ``env_spec``, the environment section ``env`` was built from, and from
    ``source``, the environment given in Python), teams of one cohort
    (:mod:`agilerl.cohorts`) train together (:func:`team_lockstep_turn`).
    """
    num_envs = env.num_envs

    def train_agent(
        agent: Any, slot: int, budget: int, run: RunState
    ) -> tuple[int, list[float], dict[str, float]]:
        obs, infos = env.reset(seed=reset_seed(run, slot, 0))
        agent.episodes_ended(np.ones(num_envs, dtype=bool))
        returns = _Returns(num_envs, _scale(sum_scores, agent))
        metrics = MeanMetrics()

        def episodes(step: on_policy.VectorStep) -> None:
            ended = step.next_info[FINAL]["ended"]
            returns.add(step.env_reward, ended)
            if ended.any():
                agent.episodes_ended(ended)

        taken = 0
        while taken < budget:
            length = math.ceil(agent.learn_step / num_envs)  # learn_step may mutate
            rollout, obs, infos = _collect(agent, env, obs, infos, length, episodes, agent.device)
            metrics.add(agent.learn(rollout, obs))
            taken += length * num_envs
        agent.steps += taken
        agent.scores.extend(returns.completed)
        return taken, returns.completed, metrics.means()

    cohorting = run_cohorting(cohorts, env_spec, source)  # each team its own rollouts
    if not trains_in_cohorts(cohorting):
        return _team_turns(
            env, pop, train_agent, None,
            sum_scores=sum_scores, eval_steps=eval_steps, eval_loop=eval_loop,
        )  # fmt: skip
    cohort_envs = TeamCohortEnvs(env_spec, source)
    return _team_turns(
        env, pop, train_agent, team_lockstep_turn(cohort_envs, sum_scores),
        sum_scores=sum_scores, eval_steps=eval_steps, eval_loop=eval_loop,
        cohorting=cohorting, close=cohort_envs.close,
    )  # fmt: skip


def _collect(
    team: Any,
    env: Any,
    obs: Any,
    infos: Any,
    length: int,
    on_step: Callable[[on_policy.VectorStep], None],
    device: Any,
) -> tuple[MultiAgentRollout, Any, Any]:
    """A rollout of ``length`` vector steps of ``env`` from ``obs``/``infos``, acted by
    ``team`` (an IPPO team, or a cohort standing in for its teams): the rollout and the
    observations and infos to continue from."""
    rollout = MultiAgentRollout(length, env.num_envs, device=device)
    collector = TeamRolloutCollector(team, rollout, env.agent_ids, on_step=on_step)
    obs, infos = on_policy.collect_rollout(env, collector, obs, infos, length)
    return rollout, obs, infos


def team_lockstep_turn(envs: TeamCohortEnvs, sum_scores: bool) -> Any:
    """The turn of a cohort of IPPO teams (:class:`~agilerl.cohorts.team_policy.
    TeamPolicyCohort`): the teams step their own copies together (each block reset with
    the seed its team's own turn would use), collect a rollout each at a time with one
    forward per group and step, and learn from them together, minibatch orders drawn
    from each team's own generator, until their ``evo_steps`` share is used. Returns
    each team's (steps, returns, metrics); an on-policy turn keeps no journal."""

    def train_cohort(
        agents: list[Any], slots: list[int], budget: int, run: RunState
    ) -> tuple[list[tuple[int, list[float], dict[str, float]]], list[Any]]:
        turn = _CohortTurn(envs, agents, slots, run, sum_scores)
        obs, infos = turn.obs, turn.infos

        def episodes(step: on_policy.VectorStep) -> None:
            turn.add(step.env_reward, step.next_info[FINAL]["ended"])

        generators = turn_generators(run, slots)
        learner = cast(TeamPolicyCohort, LEARNERS[type(agents[0])](agents))  # this turn's kind
        learner.use_copies(turn.n)
        taken = 0
        while taken < budget:
            length = math.ceil(agents[0].learn_step / turn.n)
            rollout, obs, infos = _collect(
                learner, turn.env, obs, infos, length, episodes, agents[0].device
            )
            turn.learnt(list(learner.learn(rollout, obs, generators)))
            taken += length * turn.n
        learner.write_back()
        return turn.results(taken), [None] * len(agents)

    return train_cohort


def train_multi_agent_on_policy(
    env: Any,
    env_name: str,
    algo: str,
    pop: list[Any],
    *,
    sum_scores: bool = True,
    env_spec: Any = None,
    **loop: Unpack[LoopArguments],
) -> tuple[list[Any], list[float]]:
    """Train a population of on-policy teams (IPPO) on a vectorised parallel ``env``
    (:func:`multi_agent_on_policy_turns`). With ``env_spec`` (the
    :class:`~agilerl.models.env.PzEnvSpec` ``env`` was built from), teams that share an
    architecture and a loop shape train as cohorts (``cohorts=False`` in the loop
    arguments: one at a time), stepping copies of the same spec. The other keyword
    arguments are :class:`~agilerl.training.evolution.LoopArguments`. Returns
    ``(population, fitnesses)``."""
    turns = multi_agent_on_policy_turns(
        env,
        pop,
        sum_scores=sum_scores,
        eval_steps=loop.get("eval_steps"),
        eval_loop=loop.get("eval_loop", 1),
        env_spec=env_spec,
        cohorts=loop.get("cohorts", True),
    )
    return evolve(pop, turns, run_config(algo, env_name, loop))


def off_policy_run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of an off-policy run the trainer sets up
    (:meth:`~agilerl.families.base.Family.turns`): :func:`multi_agent_off_policy_turns`
    with the run's training section, shared buffer and environment."""
    training = ctx.training
    return multi_agent_off_policy_turns(
        env,
        memory.replay,
        population,
        sum_scores=training.sum_scores,
        eval_steps=training.eval_steps,
        eval_loop=training.eval_loop,
        learning_delay=training.learning_delay,
        env_spec=ctx.environment,
        source=ctx.env_source,
        cohorts=training.cohorts,
    )


def on_policy_run_turns(ctx: RunContext, env: Any, memory: Memory, population: list[Any]) -> Turns:
    """The turns of an on-policy run the trainer sets up
    (:meth:`~agilerl.families.base.Family.turns`): :func:`multi_agent_on_policy_turns`
    with the run's training section and environment (teams keep their own rollouts)."""
    training = ctx.training
    return multi_agent_on_policy_turns(
        env,
        population,
        sum_scores=training.sum_scores,
        eval_steps=training.eval_steps,
        eval_loop=training.eval_loop,
        env_spec=ctx.environment,
        source=ctx.env_source,
        cohorts=training.cohorts,
    )
