"""On-policy collection, its time-limit bootstrap and its advantages, once for every
on-policy algorithm (PPO, recurrent PPO, IPPO).

Three pieces, each independent of how an algorithm acts or stores:

* :func:`collect_rollout` runs ``steps`` vector steps of an environment with a
  :class:`RolloutCollector`: the algorithm's hooks act (:meth:`RolloutCollector.act`),
  read the environment's outcome (:meth:`RolloutCollector.outcome`), value final
  observations (:meth:`RolloutCollector.final_values`) and store each step
  (:meth:`RolloutCollector.store`, handed a :class:`VectorStep`). The loop itself owns
  the order of a step and what ``done`` and the stored reward are.
* :func:`bootstrap_time_limits`: where an episode was cut by a time limit (truncated and
  not terminated) the reward learnt from is ``r + gamma * V(final observation)``; the
  step is still ``done`` (terminated or truncated), so the advantages stop there and the
  value the cut left out is given back through the reward.
* :func:`gae` (and :func:`discounted_returns`, :func:`advantages_and_returns`): the
  advantages of a rollout ``[T, N]`` (steps by environments, or by environment rows of
  an agent), with an optional ``active`` mask for agents absent from some steps.

Rewards, flags and values of one vector step are *trees*: one array ``[N]`` for a
single-agent environment, a dict keyed by agent id of such arrays for a multi-agent one
(:func:`~agilerl.components.observations.map_tree` walks both).

GAE (Schulman et al., 2016), with ``V_T`` the value of the observation after the rollout
and ``d_t`` the done flag of step ``t`` (the episode ended *with* step ``t``)::

    delta_t = r_t + gamma (1 - d_t) V_{t+1} - V_t
    A_t = delta_t + gamma lambda (1 - d_t) A_{t+1}
    R_t = A_t + V_t

An inactive step (``active[t]`` false: the agent was absent, as in a multi-agent
environment whose agents leave and join) is passed over: its advantage and return are 0,
and the recursion runs from the next *active* step to the previous one as if the
inactive steps were not there (``V_{t+1}`` and ``A_{t+1}`` are those of the next active
step, or ``V_T`` and 0 after the last). Its own reward, value and done flag are not read.
An agent leaves only when its episode ended (its last active step is done), so passing
over the gap never joins two episodes; an agent absent for a while inside an episode
continues from where it left off.

Without GAE the returns are discounted sums ``R_t = r_t + gamma (1 - d_t) R_{t+1}`` with
``R_T = V_T`` (inactive steps again passed over) and ``A_t = R_t - V_t``.

Every function keeps the arithmetic of the code it replaced operation for operation, so
seeded PPO and IPPO runs give the same tensors bit for bit.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np
import torch

from agilerl.components.observations import map_tree, tree_leaves

if TYPE_CHECKING:  # types only: the networks are not imported at run time
    from agilerl.networks.base import Observation

    #: Rewards and flags of a vector step: one value per environment row, nested per
    #: agent like observations in the multi-agent families.
    ArrayTree: TypeAlias = Observation

#: The info a vector environment returns with its observations (action masks, final
#: observations), per agent in the multi-agent families.
Info: TypeAlias = Mapping[str, Any]


class VectorEnvLike(Protocol):
    """What :func:`collect_rollout` steps: a vector environment (gymnasium's, or a
    multi-agent family's) returning ``(obs, reward, terminated, truncated, info)``."""

    def step(self, action: Any, /) -> tuple[Any, Any, Any, Any, Any]: ...


# -- the time-limit bootstrap --------------------------------------------------------------


def time_limit_cut(terminated: ArrayTree, truncated: ArrayTree) -> Any:
    """Where an episode was cut by a time limit: truncated and not terminated (a tree of
    bool arrays shaped like the flags)."""
    return map_tree(
        lambda te, tr: np.asarray(tr, dtype=bool) & ~np.asarray(te, dtype=bool),
        terminated,
        truncated,
    )


def bootstrap_time_limits(
    rewards: ArrayTree,
    terminated: ArrayTree,
    truncated: ArrayTree,
    gamma: float | np.ndarray,
    final_values: Callable[[Any], Any],
) -> Any:
    """The rewards to learn from: ``r + gamma * V(final observation)`` where the episode
    was cut by a time limit (:func:`time_limit_cut`), ``r`` elsewhere (float32).

    ``final_values(cut)`` gives ``V`` of the observations each step ended on (the true
    last ones, not those of the episodes an autoreset started), a tree shaped like the
    rewards; only its values where ``cut`` is true are read. It is called only when some
    episode was cut; otherwise ``rewards`` come back as given.
    """
    cut = time_limit_cut(terminated, truncated)
    if not any(c.any() for c in tree_leaves(cut)):
        return rewards
    values = final_values(cut)
    return map_tree(
        lambda r, c, v: (
            np.asarray(r, dtype=np.float32) + gamma * np.where(c, v, 0.0).astype(np.float32)
        ),
        rewards,
        cut,
        values,
    )


# -- advantages ----------------------------------------------------------------------------


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float | torch.Tensor,
    gae_lambda: float | torch.Tensor,
    active: torch.Tensor | None = None,
) -> torch.Tensor:
    """GAE advantages ``[T, N]`` (module docstring).

    ``rewards``, ``values``, ``dones`` (1 where the episode ended with the step) and
    ``active`` (bool; None: every step active) are ``[T, N]``; ``last_value`` is ``[N]``,
    the value of the observations after step ``T - 1``; ``gamma`` and ``gae_lambda``
    are numbers, or ``[N]`` float64 tensors where the environments differ in them (a
    cohort's rollout, its agents' blocks). Inactive steps get 0 and are passed over by the recursion.
    """
    if dones.dtype == torch.bool:
        dones = dones.to(rewards.dtype)
    not_done = 1.0 - dones
    # In double, then rounded once to the rewards' dtype: numbers and float64 tensors
    # give the same discounts.
    discount = gamma * gae_lambda
    gamma, discount = _like(gamma, rewards), _like(discount, rewards)
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(last_value)
    next_value = last_value
    for t in range(rewards.shape[0] - 1, -1, -1):
        delta = rewards[t] + gamma * not_done[t] * next_value - values[t]
        advantage = delta + discount * not_done[t] * running
        if active is None:
            advantages[t] = advantage
            running = advantage
            next_value = values[t]
        else:
            on = active[t]
            advantages[t] = torch.where(on, advantage, torch.zeros_like(advantage))
            running = torch.where(on, advantage, running)
            next_value = torch.where(on, values[t], next_value)
    return advantages


def _like(factor: float | torch.Tensor, values: torch.Tensor) -> float | torch.Tensor:
    """A discount factor as the recursions use it: a number as it is (torch rounds it to
    ``values``' dtype in each product), a tensor rounded to that dtype."""
    return factor.to(values.dtype) if isinstance(factor, torch.Tensor) else factor


def discounted_returns(
    rewards: torch.Tensor,
    dones: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float | torch.Tensor,
    active: torch.Tensor | None = None,
) -> torch.Tensor:
    """Discounted returns ``[T, N]`` bootstrapped from ``last_value`` (module docstring:
    GAE's arguments, inactive steps 0 and passed over)."""
    if dones.dtype == torch.bool:
        dones = dones.to(rewards.dtype)
    not_done = 1.0 - dones
    gamma = _like(gamma, rewards)
    returns = torch.zeros_like(rewards)
    running = last_value
    for t in range(rewards.shape[0] - 1, -1, -1):
        value = rewards[t] + gamma * not_done[t] * running
        if active is None:
            returns[t] = value
            running = value
        else:
            on = active[t]
            returns[t] = torch.where(on, value, torch.zeros_like(value))
            running = torch.where(on, value, running)
    return returns


def advantages_and_returns(
    rewards: torch.Tensor,
    values: torch.Tensor,
    dones: torch.Tensor,
    last_value: torch.Tensor,
    gamma: float | torch.Tensor,
    gae_lambda: float | torch.Tensor,
    *,
    use_gae: bool = True,
    active: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(advantages, returns)``, each ``[T, N]``: GAE and ``A + V`` (``use_gae``), or
    discounted returns and ``R - V``; 0 at inactive steps (:func:`gae`'s arguments)."""
    if use_gae:
        advantages = gae(rewards, values, dones, last_value, gamma, gae_lambda, active)
        returns = advantages + values
    else:
        returns = discounted_returns(rewards, dones, last_value, gamma, active)
        advantages = returns - values
    if active is not None:
        zero = torch.zeros_like(returns)
        advantages = torch.where(active, advantages, zero)
        returns = torch.where(active, returns, zero)
    return advantages, returns


# -- collection ----------------------------------------------------------------------------


@dataclass
class VectorStep:
    """One vector step as :func:`collect_rollout` hands it to :meth:`RolloutCollector.store`
    (rewards and flags are trees: module docstring)."""

    obs: Any  #: the observations acted on
    info: Any  #: the info that came with them (action masks)
    action: Any  #: what :meth:`RolloutCollector.act` gave the environment
    env_reward: Any  #: the rewards as the environment returned them (episode returns)
    reward: Any  #: the rewards to learn from: time-limit cuts bootstrapped
    terminated: Any
    truncated: Any
    done: Any  #: terminated or truncated: the episode ended with this step
    next_obs: Any  #: the observations to act on next (after any autoreset)
    next_info: Any  #: the info ``env.step`` returned (final observations, ...)


class RolloutCollector(ABC):
    """What an algorithm tells :func:`collect_rollout`: how it acts, values and stores.

    An instance lives for one rollout and may keep what :meth:`act` computed (samples,
    log-probabilities, values, a recurrent state) for :meth:`final_values` and
    :meth:`store` of the same step.
    """

    #: The discount of the time-limit bootstrap (one per row where rows differ in it).
    gamma: float | np.ndarray

    @abstractmethod
    def act(self, obs: Observation, info: Info) -> Any:
        """The actions ``env.step`` takes for observations ``obs`` (and their ``info``)."""

    def outcome(
        self, reward: ArrayTree, terminated: ArrayTree, truncated: ArrayTree
    ) -> tuple[Any, Any, Any]:
        """The environment's rewards and flags in the layout the hooks read (default: as
        given)."""
        return reward, terminated, truncated

    def learning_rewards(self, reward: ArrayTree, done: ArrayTree) -> Any:
        """The rewards to learn from, before any time-limit bootstrap (default: the
        environment's; PPO with ``normalize.reward`` scales them). Episode returns are
        counted on the environment's."""
        return reward

    @abstractmethod
    def final_values(self, next_info: Any, cut: Any) -> Any:
        """``V`` of the observations the step ended on where ``cut`` (the rows of
        episodes a time limit cut), shaped like the rewards (other rows are not read)."""

    @abstractmethod
    def store(self, step: VectorStep) -> None:
        """Keep one vector step (and do the bookkeeping of episodes that ended)."""


def collect_rollout(
    env: VectorEnvLike, collector: RolloutCollector, obs: Observation, info: Info, steps: int
) -> tuple[Any, Any]:
    """``steps`` vector steps of ``env`` (same-step autoreset) from ``obs``/``info``:
    act, step, bootstrap time-limit cuts (:func:`bootstrap_time_limits`) and store, each
    step in that order. Returns the observation and info to continue from."""
    for _ in range(steps):
        action = collector.act(obs, info)
        next_obs, reward, terminated, truncated, next_info = env.step(action)
        reward, terminated, truncated = collector.outcome(reward, terminated, truncated)
        done = map_tree(
            lambda te, tr: np.asarray(te, dtype=bool) | np.asarray(tr, dtype=bool),
            terminated,
            truncated,
        )
        learnt = bootstrap_time_limits(
            collector.learning_rewards(reward, done),
            terminated,
            truncated,
            collector.gamma,
            lambda cut, final=next_info: collector.final_values(final, cut),
        )
        collector.store(
            VectorStep(
                obs=obs,
                info=info,
                action=action,
                env_reward=reward,
                reward=learnt,
                terminated=terminated,
                truncated=truncated,
                done=done,
                next_obs=next_obs,
                next_info=next_info,
            )
        )
        obs, info = next_obs, next_info
    return obs, info
