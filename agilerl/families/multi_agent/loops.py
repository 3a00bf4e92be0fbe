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
from typing import Any

import numpy as np
import torch
from typing_extensions import Unpack

from agilerl.algorithms.core.population import Population
from agilerl.cohorts.replay import CohortReplay
from agilerl.cohorts.team_actor_critic import TeamActorCriticCohort
from agilerl.cohorts.team_policy import TeamPolicyCohort
from agilerl.cohorts.team_views import TeamPopulation
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
    Trained,
    TrainTurn,
    Turns,
    each_alone,
    evolve,
    reset_seed,
    run_config,
    vector_steps,
)
from agilerl.training.rounds import LearningRounds
from agilerl.training.sharing import ExperienceSharing
from agilerl.training.state import turn_generators
from agilerl.training.tracking import MeanMetrics

#: The replay memories a cohort of off-policy teams has a view of
#: (:class:`~agilerl.cohorts.replay.CohortReplay`).
TEAM_REPLAYS = frozenset({MultiAgentReplayBuffer})


def _scale(sum_scores: bool, team: Any) -> float:
    """What one team return counts as: itself, or per agent (``sum_scores`` false)."""
    return 1.0 if sum_scores else 1.0 / len(team.agent_ids)


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


class TeamTurn:
    """A turn of P teams of one cohort (P = 1: a team alone): what differs with P, chosen
    here and nowhere else, and what the turn keeps of each team besides its learner.

    One team steps the run's own ``env``, reset as its turn resets it (``reset_seed(run,
    slot, 0)``), on the view of itself (:meth:`~agilerl.algorithms.core.population.
    Population.of`: its own networks and optimisers), drawing from torch's global stream
    (``[torch.default_generator]``): its history is that of the team trained on its own.
    P teams step the joined copies of ``envs`` (team ``p``'s the ``p``-th block of
    :attr:`n`, each block reset with the seed its team's own turn would use) on the
    stacked view (:class:`~agilerl.cohorts.team_views.TeamPopulation`: the same code in
    one forward per group), each team drawing from its own generator
    (:func:`~agilerl.training.state.turn_generators`). Either way each team keeps its
    episodes, returns and learning metrics in its block."""

    def __init__(
        self, env: Any, envs: TeamCohortEnvs | None, agents: list[Any], slots: list[int],
        run: RunState, sum_scores: bool,
    ) -> None:  # fmt: skip
        self.agents = agents
        self.view: Population[Any]
        self.generators: list[torch.Generator]
        if len(agents) == 1:
            self.env = env
            self.obs, self.infos = env.reset(seed=reset_seed(run, slots[0], 0))
            self.view = Population.of(agents[0])
            self.generators = [torch.default_generator]
        else:
            assert envs is not None  # cohorts form only where the run makes copies
            self.env = envs.take(len(agents))
            self.obs, self.infos = self.env.reset_each([reset_seed(run, s, 0) for s in slots])
            self.view = TeamPopulation(agents)
            self.generators = turn_generators(run, slots)
        self.n = self.env.num_envs // len(agents)  # each team's copies
        # What a copy's team return counts as (its team's _scale).
        self.scale = np.repeat([_scale(sum_scores, agent) for agent in agents], self.n)
        self.running = np.zeros(self.env.num_envs)  # each copy's running team return
        self.returns: list[list[float]] = [[] for _ in agents]  # of the episodes that ended
        self.metrics = [MeanMetrics() for _ in agents]
        for agent in agents:
            agent.episodes_ended(np.ones(self.n, dtype=bool))  # every copy starts one

    def add(self, rewards: dict[str, np.ndarray], ended: np.ndarray) -> None:
        """A vector step's rewards (every agent's added) and ended episodes, each team's
        from its block."""
        self.running += sum(np.asarray(r, dtype=float) for r in rewards.values())
        for p, agent in enumerate(self.agents):
            own = slice(p * self.n, (p + 1) * self.n)
            done = ended[own]
            if done.any():
                self.returns[p].extend((self.running[own][done] * self.scale[own][done]).tolist())
                agent.episodes_ended(done)
        self.running[ended] = 0.0

    def learnt(self, figures: list[dict[str, float] | None]) -> None:
        """What each team reported of a learning call (None: it did not learn)."""
        for metrics, own in zip(self.metrics, figures, strict=True):
            if own is not None:
                metrics.add(own)

    def results(self, taken: int) -> list[Trained]:
        """Each team's (steps, returns, metrics) of a turn of ``taken`` steps per team."""
        out = []
        for agent, returns, metrics in zip(self.agents, self.returns, self.metrics, strict=True):
            agent.steps += taken
            agent.scores.extend(returns)
            out.append((taken, returns, metrics.means()))
        return out


def _team_turns(
    env: Any,
    pop: list[Any],
    train: TrainTurn,
    *,
    sum_scores: bool,
    eval_steps: int | None,
    eval_loop: int,
    cohorting: Cohorting,
    envs: TeamCohortEnvs | None,
    sharing: Any = None,
) -> Turns:
    """A team family's turns: ``train``, each team evaluated by :func:`team_evaluation`,
    and each group's fitness in the per-generation table; the run's cohort copies
    (``envs``, None: none) closed when it ends."""
    groups = sorted({g for team in pop for g in team.groups})
    return Turns(
        train,
        each_alone(team_evaluation(env, eval_steps, eval_loop, sum_scores)),
        sharing=sharing,
        table_metrics=tuple(f"fitness/{g}" for g in groups),
        cohorting=cohorting,
        close=None if envs is None else envs.close,
    )


def _cohort_envs(
    cohorting: Cohorting, spec: Any, source: PythonEnv | None
) -> TeamCohortEnvs | None:
    """The copies a run's team cohorts step, where it forms any."""
    return TeamCohortEnvs(spec, source) if trains_in_cohorts(cohorting) else None


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

    The teams of a turn (:class:`TeamTurn`; where :mod:`~agilerl.training.cohorting` lets
    them, ``cohorts``, teams of one cohort, :mod:`agilerl.cohorts`, stepping copies of
    ``env`` made from ``env_spec``, the environment section ``env`` was built from, or
    from ``source``, the environment given in Python, with a ``memory`` of
    :data:`TEAM_REPLAYS`) act together (:class:`~agilerl.cohorts.team_actor_critic.
    TeamActorCriticCohort`: one forward per group), each exploring for its ``evo_steps``
    share (its own noise, restarted per sub-environment where an episode ended), storing
    every vector step in its view of ``memory`` (:class:`~agilerl.cohorts.replay.
    CohortReplay`: the generation's buffer plus its own rows, journalled as
    :mod:`~agilerl.training.sharing` merges them) with the true next observations,
    ``done`` = terminated (a time-limit cut bootstraps) and the masks the environment
    gave (those acted within and those of the next observations). Each learns from a
    sample of ``batch_size`` rows of its view, drawn by its generator (:class:`TeamTurn`),
    every ``learn_step`` of its env steps once the view holds a batch and more than
    ``learning_delay`` rows (:class:`~agilerl.training.rounds.LearningRounds`).
    """
    sharing = ExperienceSharing(memory)
    cohorting = run_cohorting(cohorts, env_spec, source, type(memory), TEAM_REPLAYS)
    envs = _cohort_envs(cohorting, env_spec, source)

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        turn = TeamTurn(env, envs, agents, slots, run, sum_scores)
        learner = TeamActorCriticCohort(agents, turn.view)
        n_steps = vector_steps(budget, turn.n)
        replay = CohortReplay(memory, len(agents), n_steps * turn.n)
        rounds = LearningRounds(agents, turn.n, learning_delay)
        sizes = [int(agent.batch_size) for agent in agents]
        obs, infos = turn.obs, turn.infos
        for _ in range(n_steps):
            actions = learner.explore(obs, infos)
            step = turn.env.step(actions)
            rows = _transition(turn.env.agent_ids, obs, infos, actions, step)
            replay.store(dict(zip(MA_FIELDS, rows, strict=True)))
            obs, rewards, _, _, infos = step
            turn.add(rewards, infos[FINAL]["ended"])
            for live in rounds.after_step(len(replay)):
                batch = replay.rows(replay.draw(sizes, turn.generators, live))
                turn.learnt(learner.learn(batch, live, turn.generators))
        learner.write_back()
        for slot, journal in zip(slots, replay.journals(), strict=True):
            sharing.record(slot, [journal])
        return turn.results(n_steps * turn.n)

    return _team_turns(
        env, pop, train, sum_scores=sum_scores, eval_steps=eval_steps, eval_loop=eval_loop,
        cohorting=cohorting, envs=envs, sharing=sharing,
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

    The teams of a turn (:class:`TeamTurn`; where :mod:`~agilerl.training.cohorting` lets
    them, ``cohorts``, teams of one cohort, :mod:`agilerl.cohorts`, stepping copies of
    ``env`` made from ``env_spec``, the environment section ``env`` was built from, or
    from ``source``, the environment given in Python) act together
    (:class:`~agilerl.cohorts.team_policy.TeamPolicyCohort`: one forward per group and
    step) and learn together, each team's minibatch orders drawn by its own generator.
    Each team collects rollouts of ``learn_step`` env steps (rounded up to whole
    vector steps) with :func:`~agilerl.components.on_policy.collect_rollout`, the
    collection PPO uses, into a :class:`~agilerl.families.multi_agent.buffers.
    MultiAgentRollout` (:class:`~agilerl.families.multi_agent.buffers.
    TeamRolloutCollector`: obs, action, the log-probability and value its ``explore``
    recorded, reward, done = terminated or truncated, active, the action masks acted
    within), and learns from each whole (GAE per agent, bootstrapped from the
    observations after the rollout), until its ``evo_steps`` share is used. Time-limit
    cuts are bootstrapped by adding ``gamma * V`` of the last observation to that step's
    reward (each row's team's ``gamma``;
    :func:`~agilerl.components.on_policy.bootstrap_time_limits`).
    """
    cohorting = run_cohorting(cohorts, env_spec, source)  # each team its own rollouts
    envs = _cohort_envs(cohorting, env_spec, source)

    def train(agents: list[Any], slots: list[int], budget: int, run: RunState) -> list[Trained]:
        turn = TeamTurn(env, envs, agents, slots, run, sum_scores)
        obs, infos = turn.obs, turn.infos

        def episodes(step: on_policy.VectorStep) -> None:
            turn.add(step.env_reward, step.next_info[FINAL]["ended"])

        learner = TeamPolicyCohort(agents, turn.view)
        learner.use_copies(turn.n)
        taken = 0
        while taken < budget:
            length = math.ceil(agents[0].learn_step / turn.n)  # learn_step may mutate
            rollout, obs, infos = _collect(
                learner, turn.env, obs, infos, length, episodes, agents[0].device
            )
            turn.learnt(list(learner.learn(rollout, obs, turn.generators)))
            taken += length * turn.n
        learner.write_back()
        return turn.results(taken)

    return _team_turns(
        env, pop, train, sum_scores=sum_scores, eval_steps=eval_steps, eval_loop=eval_loop,
        cohorting=cohorting, envs=envs,
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
