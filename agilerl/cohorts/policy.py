"""PPO agents as one cohort: rollouts collected in lockstep with one forward per step,
and every agent's epochs of minibatches learnt with one loss and one optimiser step each.

Collection runs :func:`~agilerl.components.on_policy.collect_rollout` (the loop every
on-policy agent collects with) over the cohort's environments joined into one vector env
(agent ``p``'s copies the ``p``-th block): the cohort acts for every row with one
forward of the stacked networks (the first agent's own ``_forward_x``, its networks
holding the stacked modules) and stores every row at once into one rollout buffer of
the cohort, whose columns are the agents' blocks; each column's advantages are computed
with its agent's ``gamma`` and ``gae_lambda``, each agent's episode returns counted on
its own block. Actions are sampled from torch's global generator, which the generation
loop seeds per cohort.

Learning replays :meth:`~agilerl.algorithms.ppo.PPO.learn` for all agents at once: each
agent's epochs draw its own order of its samples (its own generator, over its samples
numbered as its own rollout buffer numbers them), minibatch ``k`` of every agent runs
through the stacked networks together, and
:func:`~agilerl.algorithms.ppo.clipped_ppo_loss` reduces each agent's rows with its own
``clip_coef``, ``ent_coef`` and ``vf_coef``. Each agent's gradient is clipped to its own
``max_grad_norm``, and ``target_kl`` stops each agent on its own: the minibatch whose KL
exceeded it is measured but not stepped on, and the agent is masked out of the steps
after it (weights and Adam moments untouched), as its own ``learn`` would stop. An agent
of fewer ``update_epochs`` is masked out the same way once its epochs are done.

Agents of a cohort share what shapes a rollout and its minibatches: ``num_envs``,
``learn_step`` (the rollout length), ``batch_size`` and ``use_gae``
(:data:`PolicyCohort.same`, part of the cohort key), so their minibatches line up. Recurrent agents (LSTM encoders) do not
stack (torch's LSTM kernel takes one set of weights) and train alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.core.rl_algorithm import action_mask_from_info
from agilerl.algorithms.optim import StackedAdam
from agilerl.cohorts.ppo_epochs import OwnSettings, cohort_ppo_loss, ppo_epochs
from agilerl.cohorts.stacking import StackedNetwork
from agilerl.components import on_policy
from agilerl.components.rollout_buffer import RolloutBatch, RolloutBuffer
from agilerl.observations import stack_tree


class PolicyCohort:
    """PPO agents (same architecture and loop shape) as one; see the module docstring."""

    #: Attributes that must be equal across the cohort (the loop's shape).
    same: ClassVar[tuple[str, ...]] = (
        "num_envs",
        "learn_step",
        "batch_size",
        "share_encoders",
        "recurrent",
        "use_gae",
    )

    def __init__(self, agents: Sequence[Any]) -> None:
        self.agents = list(agents)
        self.template = self.agents[0]
        self.actor = StackedNetwork([agent.actor for agent in self.agents])
        shared = (
            {"encoder": self.actor.modules["encoder"]} if self.template.share_encoders else None
        )
        self.critic = StackedNetwork([agent.critic for agent in self.agents], shared=shared)
        params = self.actor.parameters() + self.critic.parameters()
        self.adam = StackedAdam(
            params,
            [
                self.actor.agent_parameters(a.actor) + self.critic.agent_parameters(a.critic)
                for a in self.agents
            ],
            [agent.optimizer for agent in self.agents],
            [agent.lr for agent in self.agents],
        )
        #: Each agent's own settings of its update.
        self.own = OwnSettings.of(self.agents, params[0].device)
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
        with self.actor.bound(), self.critic.bound():
            obs, info = on_policy.collect_rollout(
                env, collector, obs, info, self.template.rollout_length
            )
            last = self.template._value(obs)
        buffer.compute_returns_and_advantages(last)
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
    def learn(self, generators: Sequence[torch.Generator]) -> list[dict[str, float]]:
        """Every agent's PPO update on its rollout (module docstring), minibatch orders
        drawn from ``generators`` (one per agent); each agent's metrics as its own
        :meth:`~agilerl.algorithms.ppo.PPO.learn` reports them."""
        count = len(self.agents)
        assert self.buffer is not None  # collect_rollouts came first
        every = self.buffer.samples()
        size = len(self.buffer) // count
        # Agent p's sample i, numbered as its own buffer numbers it (step by step, its
        # own n copies), is row (i // n) * P * n + p * n + i % n of the cohort's samples.
        n = self.buffer.num_envs // count
        own = torch.arange(size)
        where = (own // n * n * count + own % n).unsqueeze(0) + (torch.arange(count) * n).unsqueeze(
            1
        )
        return ppo_epochs(
            where,
            self.template.batch_size,
            self.own,
            generators,
            lambda index: self._loss(every.rows(index), count),
            self.adam,
        ).metrics()

    def _loss(self, batch: RolloutBatch, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent's PPO loss ``(P,)`` and metrics ``(6, P)`` of a joined minibatch."""
        with self.actor.bound(), self.critic.bound():
            dist, value = self.template._forward(batch.obs, batch.action_masks)
        return cohort_ppo_loss(
            dist.log_prob(batch.actions), dist.entropy(), value, batch, count, self.own
        )

    def write_back(self) -> None:
        """Every agent's weights and optimiser state back into it."""
        self.actor.write_back([agent.actor for agent in self.agents])
        self.critic.write_back([agent.critic for agent in self.agents])
        self.adam.write_back([agent.optimizer for agent in self.agents])


class _CohortCollector(on_policy.RolloutCollector):
    """The cohort's hooks of :func:`~agilerl.components.on_policy.collect_rollout`: one
    forward acts for every row, and every row is stored at once into the cohort's
    buffer; each agent's episode returns are counted on its own block."""

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
        template = self.cohort.template
        mask = action_mask_from_info(info)
        with torch.inference_mode():
            dist, value, _ = template._forward_x(template._preprocess(obs), mask, None)
            sample = dist.sample()
            log_prob = dist.log_prob(sample)
        self._acted = (sample, log_prob, value, mask)
        return template.actor.distribution.env_actions(sample)

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
        return self.cohort.template._value(rows).cpu().numpy()

    def store(self, step: on_policy.VectorStep) -> None:
        sample, log_prob, value, mask = self._acted
        self.buffer.add(step.obs, sample, step.reward, step.done, value, log_prob, mask)
        self.returns += step.env_reward
        for i in np.flatnonzero(step.done):
            self.completed[i // self.per_agent].append(float(self.returns[i]))
            self.returns[i] = 0.0
