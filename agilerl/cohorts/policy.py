"""PPO agents as one cohort: the collection glue of the on-policy lockstep turn around
PPO's own acting and update on the cohort's stacked view
(:class:`~agilerl.cohorts.views.StackedPopulation`).

Collection runs :func:`~agilerl.components.on_policy.collect_rollout` (the loop every
on-policy agent collects with) over the cohort's environments joined into one vector env
(agent ``p``'s copies the ``p``-th block): :meth:`~agilerl.algorithms.ppo.PPO.act` acts
for every row with one forward of the stacked networks, and every row is stored at once
into one rollout buffer of the cohort, whose columns are the agents' blocks; each
column's advantages are computed with its agent's ``gamma`` and ``gae_lambda``, each
agent's episode returns counted on its own block. Actions are sampled from torch's
global generator, which the generation loop seeds per cohort.

Learning is :meth:`~agilerl.algorithms.ppo.PPO.update` on the stacked view and the
cohort's rollout: each agent its own minibatch orders (its own generator), its own
coefficients, gradient clip, ``target_kl`` and ``update_epochs``. Agents of a cohort
share what shapes a rollout and its minibatches (:attr:`~agilerl.algorithms.ppo.PPO.
cohort_same`, part of the cohort key). Recurrent agents (LSTM encoders) do not stack
(torch's LSTM kernel takes one set of weights) and train alone.

Both serve the one on-policy turn (:func:`~agilerl.families.single_agent.on_policy.
on_policy_turn`) behind :class:`Rollouts`: a cohort (P > 1) is a :class:`PolicyCohort`;
an agent alone is :class:`OwnRollouts`, the agent's own collection and PPO's update on
its view of one. (A :class:`PolicyCohort` on the view of one reproduces a feed-forward
agent's own rollouts and updates bit for bit, but its collection carries no recurrent
state and no reward normalisation, which agents alone have: so an agent alone collects
its own way.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import torch

from agilerl.algorithms.core.population import Population
from agilerl.algorithms.core.rl_algorithm import action_mask_from_info
from agilerl.cohorts.views import StackedPopulation
from agilerl.components import on_policy
from agilerl.components.observations import stack_tree
from agilerl.components.rollout_buffer import RolloutBuffer


class Rollouts(Protocol):
    """What an on-policy turn drives for its P agents: a rollout of every agent at a
    time, then every agent's update on its own; :class:`PolicyCohort` (P > 1) or
    :class:`OwnRollouts` (an agent alone)."""

    def collect_rollouts(
        self, env: Any, obs: Any, info: dict[str, Any]
    ) -> tuple[Any, dict[str, Any], list[list[float]]]: ...

    def learn(self, generators: Sequence[torch.Generator]) -> list[dict[str, float] | None]: ...

    def write_back(self) -> None: ...


class OwnRollouts:
    """A PPO agent alone as its turn drives a cohort (:class:`Rollouts`): its own
    collection (:meth:`~agilerl.algorithms.ppo.PPO.collect_rollouts`, which carries a
    recurrent agent's hidden state and scales rewards with ``normalize``: neither
    stacks, so the cohort's collection has neither) and PPO's update on its view of one,
    its own floats."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.view = Population.of(agent)

    def collect_rollouts(
        self, env: Any, obs: Any, info: dict[str, Any]
    ) -> tuple[Any, dict[str, Any], list[list[float]]]:
        obs, info, returns = self.agent.collect_rollouts(env, obs, info)
        return obs, info, [returns]

    def learn(self, generators: Sequence[torch.Generator]) -> list[dict[str, float] | None]:
        """PPO's update of the agent on its rollout, its minibatch orders drawn from
        ``generators``' one (``[torch.default_generator]``: the stream its actions are
        drawn from too, as the agent's own ``learn`` draws)."""
        buffer = self.agent.rollout_buffer
        assert buffer is not None  # collect_rollouts came first
        return self.agent.update(self.view, buffer, generators)

    def write_back(self) -> None:
        """Nothing: the view of one trains the agent's own networks and optimiser."""


class PolicyCohort:
    """PPO agents (same architecture and loop shape) as one; see the module docstring."""

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.view = StackedPopulation(self.agents)
        #: The cohort's rollouts: agent ``p``'s rows the ``p``-th block of its columns
        #: (built at the first rollout, when the number of copies is known).
        self.buffer: RolloutBuffer | None = None
        #: Every row's episode return in flight, carried from rollout to rollout.
        self.returns: np.ndarray | None = None

    # -- collection -------------------------------------------------------------------------
    def collect_rollouts(
        self, env: Any, obs: Any, info: dict[str, Any]
    ) -> tuple[Any, dict[str, Any], list[list[float]]]:
        """One rollout of every agent on ``env`` (the agents' envs joined, agent ``p``'s
        copies the ``p``-th block), from ``obs``/``info``; each agent's advantages are
        computed. Returns the observation and info to continue from and each agent's
        returns of the episodes that ended."""
        per_agent = env.num_envs // len(self.agents)
        for agent in self.agents:
            agent.num_envs = per_agent
        buffer = self._rollout_buffer(env.num_envs)
        buffer.reset()
        returns = self.returns if self.returns is not None else np.zeros(env.num_envs)
        self.returns = returns
        collector = _CohortCollector(self, buffer, returns, per_agent)
        obs, info = on_policy.collect_rollout(
            env, collector, obs, info, self.template.rollout_length
        )
        buffer.compute_returns_and_advantages(self.template.values(self.view, obs))
        return obs, info, collector.completed

    def _rollout_buffer(self, num_envs: int) -> RolloutBuffer:
        """The cohort's rollout buffer of ``num_envs`` columns, each with its agent's
        discounts (what each agent's own buffer would be given)."""
        template = self.template
        buffer = self.buffer
        if buffer is None or buffer.num_envs != num_envs:
            buffer = RolloutBuffer(
                template.rollout_length,
                num_envs,
                template.observation_space,
                template.action_space,
                template.device,
                use_gae=template.use_gae,
            )
            self.buffer = buffer
        per_agent = num_envs // len(self.agents)

        def by_column(name: str) -> torch.Tensor:
            # float64, as the numbers of an agent's own buffer (on_policy.gae rounds them).
            values = [float(getattr(agent, name)) for agent in self.agents]
            column = torch.tensor(values, dtype=torch.float64, device=buffer.device)
            return column.repeat_interleave(per_agent)

        buffer.gamma = by_column("gamma")
        buffer.gae_lambda = by_column("gae_lambda")
        return buffer

    # -- learning ---------------------------------------------------------------------------
    def learn(self, generators: Sequence[torch.Generator]) -> list[dict[str, float] | None]:
        """Every agent's PPO update on its block of the cohort's rollout (PPO's own
        :meth:`~agilerl.algorithms.ppo.PPO.update` on the stacked view), minibatch orders
        drawn from ``generators`` (one per agent); each agent's metrics as its own
        ``learn`` reports them."""
        assert self.buffer is not None  # collect_rollouts came first
        return self.template.update(self.view, self.buffer, generators)

    def write_back(self) -> None:
        """Every agent's weights and optimiser state back into it."""
        self.view.write_back()


class _CohortCollector(on_policy.RolloutCollector):
    """The cohort's hooks of :func:`~agilerl.components.on_policy.collect_rollout`: PPO's
    acting for every row, and every row stored at once into the cohort's buffer; each
    agent's episode returns are counted on its own block."""

    def __init__(
        self, cohort: PolicyCohort, buffer: RolloutBuffer, returns: np.ndarray, per_agent: int
    ) -> None:
        self.cohort = cohort
        self.buffer = buffer
        self.returns = returns
        self.per_agent = per_agent
        #: Each agent's returns of the episodes that ended in this rollout.
        self.completed: list[list[float]] = [[] for _ in cohort.agents]
        #: Each row's agent's discount, for the time-limit bootstrap.
        self.gamma = np.repeat(
            np.array([agent.gamma for agent in cohort.agents], dtype=np.float32), per_agent
        )
        self._acted: tuple[Any, ...] = ()

    def act(self, obs: Any, info: Any) -> np.ndarray:
        mask = action_mask_from_info(info)
        acted = self.cohort.template.act(self.cohort.view, obs, mask)
        self._acted = (acted.sample, acted.log_prob, acted.value, mask)
        return acted.actions

    def outcome(
        self, reward: Any, terminated: Any, truncated: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (
            np.asarray(reward, dtype=np.float32).reshape(-1),
            np.asarray(terminated, dtype=bool).reshape(-1),
            np.asarray(truncated, dtype=bool).reshape(-1),
        )

    def final_values(self, next_info: Any, cut: np.ndarray) -> np.ndarray:
        """``V`` of every row's final observation where ``cut``: the stacked networks
        value every row at once, so the rows not cut repeat a cut row's observation."""
        final = next_info["final_obs"]
        envs = np.flatnonzero(cut)
        filler = final[envs[0]]
        rows = stack_tree([final[i] if cut[i] else filler for i in range(len(cut))])
        cohort = self.cohort
        return cohort.template.values(cohort.view, rows).cpu().numpy()

    def store(self, step: on_policy.VectorStep) -> None:
        sample, log_prob, value, mask = self._acted
        self.buffer.add(step.obs, sample, step.reward, step.done, value, log_prob, mask)
        self.returns += step.env_reward
        for i in np.flatnonzero(step.done):
            self.completed[i // self.per_agent].append(float(self.returns[i]))
            self.returns[i] = 0.0
