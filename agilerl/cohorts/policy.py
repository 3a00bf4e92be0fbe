"""PPO agents as one cohort: rollouts collected in lockstep with one forward per step,
and every agent's epochs of minibatches learnt with one loss and one optimiser step each.

Collection runs :func:`~agilerl.components.on_policy.collect_rollout` (the loop every
on-policy agent collects with) over the cohort's environments joined into one vector env
(agent ``p``'s copies the ``p``-th block): the cohort acts for every row with one
forward of the stacked networks (the first agent's own ``_forward_x``, its networks
holding the stacked modules), and each agent's own rollout collector stores its block
into its own rollout buffer (its episode returns, its advantages with its ``gamma`` and
``gae_lambda``). Actions are sampled from torch's global generator, which the generation
loop seeds per cohort.

Learning replays :meth:`~agilerl.algorithms.ppo.PPO.learn` for all agents at once: each
agent's epochs draw its own order of its samples (its own generator), minibatch ``k``
of every agent runs through the stacked networks together, and
:func:`~agilerl.algorithms.ppo.clipped_ppo_loss` reduces each agent's rows with its own
``clip_coef``, ``ent_coef`` and ``vf_coef``. Each agent's gradient is clipped to its own
``max_grad_norm``, and ``target_kl`` stops each agent on its own: the minibatch whose KL
exceeded it is measured but not stepped on, and the agent is masked out of the steps
after it (weights and Adam moments untouched), as its own ``learn`` would stop. An agent
of fewer ``update_epochs`` is masked out the same way once its epochs are done.

Agents of a cohort share what shapes a rollout and its minibatches: ``num_envs``,
``learn_step`` (the rollout length) and ``batch_size`` (:data:`PolicyCohort.same`, part
of the cohort key), so their minibatches line up. Recurrent agents (LSTM encoders) do not
stack (torch's LSTM kernel takes one set of weights) and train alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.algorithms.core.rl_algorithm import action_mask_from_info
from agilerl.algorithms.ppo import METRICS, _RolloutCollector, clipped_ppo_loss
from agilerl.cohorts.adam import StackedAdam
from agilerl.cohorts.stacking import StackedNetwork
from agilerl.components import on_policy
from agilerl.components.rollout_buffer import RolloutBatch
from agilerl.observations import split_tree, stack_tree


class PolicyCohort:
    """PPO agents (same architecture and loop shape) as one; see the module docstring."""

    #: Attributes that must be equal across the cohort (the loop's shape).
    same: ClassVar[tuple[str, ...]] = (
        "num_envs",
        "learn_step",
        "batch_size",
        "share_encoders",
        "recurrent",
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
        device = params[0].device

        def per_agent(name: str) -> torch.Tensor:
            return torch.tensor([float(getattr(a, name)) for a in self.agents], device=device)

        self.clip_coef = per_agent("clip_coef").unsqueeze(1)
        self.ent_coef = per_agent("ent_coef").unsqueeze(1)
        self.vf_coef = per_agent("vf_coef").unsqueeze(1)
        self.max_grad_norm = per_agent("max_grad_norm")
        self.target_kl = [agent.target_kl for agent in self.agents]
        #: Each agent's episode returns in flight, carried from rollout to rollout.
        self.returns: list[np.ndarray] | None = None

    # -- collection -------------------------------------------------------------------------
    def collect_rollouts(
        self, env: Any, obs: Any, info: dict[str, Any]
    ) -> tuple[Any, dict[str, Any], list[list[float]]]:
        """One rollout of every agent on ``env`` (the agents' envs joined, agent ``p``'s
        copies the ``p``-th block), from ``obs``/``info``; each agent's advantages are
        computed. Returns the observation and info to continue from and each agent's
        returns of the episodes that ended."""
        count = len(self.agents)
        per_agent = env.num_envs // count
        collectors = []
        if self.returns is None:
            self.returns = [np.zeros(per_agent) for _ in self.agents]
        for agent, returns in zip(self.agents, self.returns, strict=True):
            agent.num_envs = per_agent
            buffer = agent._ensure_buffer()
            buffer.reset()
            collectors.append(_RolloutCollector(agent, buffer, None, returns))
        joint = _CohortCollector(self, collectors, per_agent)
        steps = self.template.rollout_length
        with self.actor.bound(), self.critic.bound():
            obs, info = on_policy.collect_rollout(env, joint, obs, info, steps)
            last = self.template._value(obs)
        for collector, own in zip(collectors, split_tree(last, count), strict=True):
            collector.buffer.compute_returns_and_advantages(own)
        return obs, info, [collector.completed for collector in collectors]

    # -- learning ---------------------------------------------------------------------------
    def learn(self, generators: Sequence[torch.Generator]) -> list[dict[str, float]]:
        """Every agent's PPO update on its rollout (module docstring), minibatch orders
        drawn from ``generators`` (one per agent); each agent's metrics as its own
        :meth:`~agilerl.algorithms.ppo.PPO.learn` reports them."""
        count = len(self.agents)
        samples = [agent.rollout_buffer.samples() for agent in self.agents]  # type: ignore[union-attr]
        size = int(samples[0].log_probs.shape[0])
        every = _joined(samples)
        batch_size = self.template.batch_size
        device = self.adam.params[0].device
        offsets = (torch.arange(count) * size).unsqueeze(1)
        epochs = np.array([agent.update_epochs for agent in self.agents])
        stopped = np.zeros(count, dtype=bool)  # by its target_kl
        totals = torch.zeros(len(METRICS), count, device=device)
        evaluated = np.zeros(count)
        updates = np.zeros(count)
        kl_index = METRICS.index("approx_kl")
        watch_kl = any(limit is not None for limit in self.target_kl)
        limits = np.array([np.inf if limit is None else limit for limit in self.target_kl])
        unused = torch.arange(size)  # the rows of an agent that has finished
        for epoch in range(int(epochs.max())):
            active = ~stopped & (epoch < epochs)
            if not active.any():
                break
            # Only an agent still learning draws its order, as its own learn would.
            orders = torch.stack(
                [
                    torch.randperm(size, generator=g) if active[p] else unused
                    for p, g in enumerate(generators)
                ]
            )
            for start in range(0, size, batch_size):
                if not active.any():
                    break
                index = (orders[:, start : start + batch_size] + offsets).reshape(-1)
                batch = every.rows(index.to(device))
                loss, stats = self._loss(batch, count)
                totals += stats * torch.as_tensor(active, device=device)
                evaluated += active
                step = active.copy()
                if watch_kl:
                    # One read of every agent's KL decides which of them step: the
                    # minibatch that exceeded it is measured, not stepped on.
                    exceeded = active & (stats[kl_index].cpu().numpy() > limits)
                    stopped |= exceeded
                    step &= ~exceeded
                if step.any():
                    stepping = torch.as_tensor(step, device=device)
                    self.adam.minimise((loss * stepping).sum(), stepping, self.max_grad_norm)
                    updates += step
                active = step
        means = (totals / torch.as_tensor(np.maximum(evaluated, 1), device=device)).T.tolist()
        return [
            {
                **dict(zip(METRICS, means[p], strict=True)),
                "updates": float(updates[p]),
                "early_stop": float(stopped[p]),
            }
            for p in range(count)
        ]

    def _loss(self, batch: RolloutBatch, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Each agent's PPO loss ``(P,)`` and metrics ``(6, P)`` of a joined minibatch."""
        with self.actor.bound(), self.critic.bound():
            dist, value = self.template._forward(batch.obs, batch.action_masks)
        log_prob, entropy = dist.log_prob(batch.actions), dist.entropy()

        def agent_rows(x: torch.Tensor) -> torch.Tensor:
            return x.reshape(count, -1)

        rows = replace(
            batch,
            log_probs=agent_rows(batch.log_probs),
            advantages=agent_rows(batch.advantages),
            values=agent_rows(batch.values),
            returns=agent_rows(batch.returns),
        )
        return clipped_ppo_loss(
            agent_rows(log_prob), agent_rows(entropy), agent_rows(value), rows,
            self.clip_coef, self.ent_coef, self.vf_coef,
        )  # fmt: skip

    def write_back(self) -> None:
        """Every agent's weights and optimiser state back into it."""
        self.actor.write_back([agent.actor for agent in self.agents])
        self.critic.write_back([agent.critic for agent in self.agents])
        self.adam.write_back([agent.optimizer for agent in self.agents])


def _joined(batches: Sequence[RolloutBatch]) -> RolloutBatch:
    """Flat batches of several agents as one, agent by agent (an agent's rollout that
    saw no action mask counts every action allowed)."""
    known = next((b.action_masks for b in batches if b.action_masks is not None), None)
    if known is not None:
        batches = [
            b if b.action_masks is not None else replace(b, action_masks=torch.ones_like(known))
            for b in batches
        ]
    return batches[0].map(lambda *leaves: torch.cat(leaves), *batches[1:])


class _CohortCollector(on_policy.RolloutCollector):
    """The cohort's hooks of :func:`~agilerl.components.on_policy.collect_rollout`: one
    forward acts for every agent's block; each agent's own collector stores its block."""

    def __init__(
        self, cohort: PolicyCohort, collectors: list[_RolloutCollector], per_agent: int
    ) -> None:
        self.cohort = cohort
        self.collectors = collectors
        #: Each row's agent's discount, for the time-limit bootstrap.
        self.gamma = np.repeat(
            np.array([agent.gamma for agent in cohort.agents], dtype=np.float32), per_agent
        )

    def act(self, obs: Any, info: Any) -> np.ndarray:
        template = self.cohort.template
        mask = action_mask_from_info(info)
        with torch.inference_mode():
            dist, value, _ = template._forward_x(template._preprocess(obs), mask, None)
            sample = dist.sample()
            log_prob = dist.log_prob(sample)
        count = len(self.collectors)
        masks = [None] * count if mask is None else split_tree(mask, count)
        for collector, *acted in zip(
            self.collectors,
            split_tree(sample, count),
            split_tree(log_prob, count),
            split_tree(value, count),
            masks,
            strict=True,
        ):
            collector._acted = (*acted, None)
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
        count = len(self.collectors)
        parts = [
            split_tree(field, count)
            for field in (
                step.obs,
                step.env_reward,
                step.reward,
                step.terminated,
                step.truncated,
                step.done,
            )
        ]
        for collector, (obs, env_reward, reward, terminated, truncated, done) in zip(
            self.collectors, zip(*parts, strict=True), strict=True
        ):
            collector.store(
                on_policy.VectorStep(
                    obs=obs,
                    info=None,
                    action=None,
                    env_reward=env_reward,
                    reward=reward,
                    terminated=terminated,
                    truncated=truncated,
                    done=done,
                    next_obs=None,
                    next_info=None,
                )
            )
