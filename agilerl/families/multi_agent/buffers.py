"""Storage of the multi-agent loops: a replay buffer (MADDPG, MATD3) and a rollout (IPPO),
with the hooks that collect a team's rollout (:class:`TeamRolloutCollector`).

Every field is per agent: a dict keyed by agent id of arrays with the vector env's
number of environments ``N`` as leading dimension, as :class:`~agilerl.families.multi_agent.vector.ParallelVecEnv`
returns them. Besides the transition itself each row carries ``active``: whether the
agent was present and acted at that step, so nothing an absent agent "did" is learned
from (its rows are zeros, stored only to keep every agent's rows aligned by step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import torch

from agilerl.components.observations import map_tree
from agilerl.components.on_policy import RolloutCollector, VectorStep
from agilerl.components.replay_buffer import FIELDS, ReplayBuffer
from agilerl.families.multi_agent.vector import FINAL

#: Fields of a multi-agent transition, in the order :meth:`MultiAgentReplayBuffer.add`
#: takes them (each a dict keyed by agent id). The masks hold only the agents whose
#: environment gives masks in its infos (a Dict observation's mask is in ``obs``).
MA_FIELDS = (*FIELDS, "active", "action_mask", "next_action_mask")
#: Fields of a rollout step, in the order :meth:`MultiAgentRollout.add` takes them.
ROLLOUT_FIELDS = ("obs", "action", "log_prob", "value", "reward", "done", "active", "action_mask")


def active_of(infos: dict[str, Any], agent_ids: list[str]) -> dict[str, Any]:
    """Which sub-environments each agent acted in (the vector env's ``active`` flags)."""
    return {agent: infos[agent]["active"] for agent in agent_ids}


def masks_of(infos: dict[str, Any], agent_ids: list[str]) -> dict[str, Any]:
    """The action masks of the agents that have one (what the actions were chosen within)."""
    return {a: infos[a]["action_mask"] for a in agent_ids if "action_mask" in infos[a]}


class MultiAgentReplayBuffer(ReplayBuffer):
    """Circular buffer of the last ``max_size`` vector-env rows of every agent, sampled
    uniformly with replacement. One row holds every agent's transition of one sub-env
    step, so a sample gives a centralised critic all observations and actions of the
    same moment. Storage, sampling and checkpoints are :class:`ReplayBuffer`'s (its
    trees are nested one level deeper: field -> agent id -> leaves)."""

    fields: ClassVar[tuple[str, ...]] = MA_FIELDS

    def add(  # type: ignore[override]
        self,
        obs: Any,
        action: Any,
        reward: Any,
        next_obs: Any,
        done: Any,
        active: Any,
        action_mask: Any = None,
        next_action_mask: Any = None,
    ) -> None:
        """Store one vector step: every argument is a dict keyed by agent id of
        ``[N, ...]`` arrays (``active``: ``[N]`` bool; the masks, ``[N, n]`` bool, of
        the agents that have one in their infos: those the action was chosen within and
        those of ``next_obs``). Which agents have masks must stay the same."""
        values = (obs, action, reward, next_obs, done, active)
        agents = [set(v) for v in values]
        if any(a != agents[0] for a in agents):
            raise ValueError(
                "every field of a multi-agent transition needs the same agent ids, got "
                + ", ".join(f"{n}: {sorted(a)}" for n, a in zip(MA_FIELDS, agents, strict=False))
            )
        masks = (dict(action_mask or {}), dict(next_action_mask or {}))
        self.store(dict(zip(MA_FIELDS, (*values, *masks), strict=True)))

    def sample(self, batch_size: int, return_indices: bool = False) -> dict[str, Any]:
        """``batch_size`` rows: a dict keyed by ``obs``, ``action``, ``reward``,
        ``next_obs``, ``done``, ``active``, ``action_mask`` and ``next_action_mask``,
        each a dict keyed by agent id of tensors ``[batch_size, ...]`` (the masks' of
        the agents that have one)."""
        return super().sample(batch_size, return_indices)


class MultiAgentRollout:
    """One on-policy rollout of ``capacity`` vector steps, handed to ``IPPO.learn`` whole.

    Each field (:data:`ROLLOUT_FIELDS`) is a dict keyed by agent id of tensors
    ``[T, N, ...]`` (``T`` the steps added so far; :meth:`field` or attributes ``obs``,
    ``action``, ...). Storage is allocated from the first step added, on ``device``.
    ``done`` marks the step an agent's episode ended with (terminated or truncated), so
    advantages are not carried across it; ``active`` the steps the agent acted in.
    """

    def __init__(self, capacity: int, num_envs: int, device: str | torch.device = "cpu") -> None:
        for name, value in (("capacity", capacity), ("num_envs", num_envs)):
            if isinstance(value, bool) or int(value) != value or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.capacity = int(capacity)
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self._storage: dict[str, Any] | None = None
        self._pos = 0

    def __len__(self) -> int:
        return self._pos

    @property
    def full(self) -> bool:
        return self._pos >= self.capacity

    def reset(self) -> None:
        """Start a new rollout (the storage is kept)."""
        self._pos = 0

    def add(
        self,
        obs: Any,
        action: Any,
        log_prob: Any,
        value: Any,
        reward: Any,
        done: Any,
        active: Any,
        action_mask: Any = None,
    ) -> None:
        """Store one vector step; every argument is a dict keyed by agent id of ``[N, ...]``
        arrays or tensors (``action_mask``: the masks the actions were chosen within, of
        the agents whose infos give one; the same agents every step)."""
        if self.full:
            raise ValueError(f"the rollout is full ({self.capacity} steps): learn, then reset()")
        given = (obs, action, log_prob, value, reward, done, active, dict(action_mask or {}))
        values = dict(zip(ROLLOUT_FIELDS, given, strict=True))
        batch = {name: map_tree(self._tensor, tree) for name, tree in values.items()}
        for name, tree in batch.items():
            map_tree(lambda leaf, name=name: self._check_rows(leaf, name), tree)
        if self._storage is None:
            self._storage = {
                name: map_tree(
                    lambda leaf: torch.zeros(
                        (self.capacity, *leaf.shape), dtype=leaf.dtype, device=self.device
                    ),
                    tree,
                )
                for name, tree in batch.items()
            }
        row = self._pos

        def write(store: torch.Tensor, leaf: torch.Tensor) -> None:
            if store.shape[1:] != leaf.shape:
                raise ValueError(
                    f"rollout step of shape {tuple(leaf.shape)} does not match the "
                    f"rollout's {tuple(store.shape[1:])}"
                )
            store[row] = leaf

        for name in ROLLOUT_FIELDS:
            map_tree(write, self._storage[name], batch[name])
        self._pos += 1

    def _tensor(self, value: Any) -> torch.Tensor:
        tensor = value.detach() if torch.is_tensor(value) else torch.as_tensor(np.asarray(value))
        if tensor.dtype == torch.float64:  # rewards and flags of numpy code
            tensor = tensor.float()
        return tensor.to(self.device)

    def _check_rows(self, leaf: torch.Tensor, name: str) -> None:
        if leaf.dim() == 0 or leaf.shape[0] != self.num_envs:
            raise ValueError(
                f"rollout field {name!r}: expected a leading dimension of {self.num_envs} "
                f"(num_envs), got shape {tuple(leaf.shape)}"
            )

    def field(self, name: str) -> dict[str, Any]:
        """Field ``name`` of the steps added so far: agent id -> ``[T, N, ...]``."""
        if name not in ROLLOUT_FIELDS:
            raise KeyError(f"a rollout has fields {ROLLOUT_FIELDS}, not {name!r}")
        if self._storage is None:
            raise ValueError("the rollout is empty")
        return map_tree(lambda store: store[: self._pos], self._storage[name])

    def __getattr__(self, name: str) -> Any:
        if name in ROLLOUT_FIELDS:
            return self.field(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class TeamRolloutCollector(RolloutCollector):
    """A team's hooks of :func:`~agilerl.components.on_policy.collect_rollout` on a
    :class:`~agilerl.families.multi_agent.vector.ParallelVecEnv`, into a
    :class:`MultiAgentRollout`.

    The team acts with ``explore`` (whose ``last_step`` gives the log-probabilities and
    values stored beside the actions); each step stores the observations acted on, the
    actions, the rewards with time-limit cuts bootstrapped by ``team.values`` of the
    final observations, ``done`` (terminated or truncated), ``active`` (the agents that
    acted, from the step's infos) and the masks the actions were chosen within (those of
    the infos acted on). ``on_step(step)``, if given, runs after each step is stored (the
    loop's episode returns and ``episodes_ended``).
    """

    def __init__(
        self,
        team: Any,
        rollout: MultiAgentRollout,
        agent_ids: list[str],
        on_step: Callable[[VectorStep], None] | None = None,
    ) -> None:
        self.team = team
        self.rollout = rollout
        self.agent_ids = list(agent_ids)
        self.on_step = on_step
        self.gamma = team.gamma
        self._recorded: dict[str, Any] = {}

    def act(self, obs: Any, info: Any) -> Any:
        actions = self.team.explore(obs, info)
        self._recorded = self.team.last_step
        return actions

    def final_values(self, next_info: Any, cut: Any) -> Any:
        return self.team.values(next_info[FINAL]["obs"])

    def store(self, step: VectorStep) -> None:
        ids = self.agent_ids
        self.rollout.add(
            step.obs,
            step.action,
            self._recorded["log_prob"],
            self._recorded["value"],
            step.reward,
            step.done,
            active_of(step.next_info, ids),
            masks_of(step.info, ids),
        )
        if self.on_step is not None:
            self.on_step(step)
