"""``MultiAgentRLAlgorithm``: the contract of the multi-agent family.

Agents are built from per-agent spaces keyed by agent id (what
``MultiAgentRLAlgorithmSpec.build_algorithm`` passes). Agents whose ids share a prefix
(``speaker_0``, ``speaker_1`` -> ``speaker``) form a group, and a group shares one
policy, so its agents must have the same spaces. Everything else an agent of any family
has (hyperparameters and their mutation, declared networks, checkpoints, ``clone``)
comes from :class:`~agilerl.algorithms.core.evolvable.EvolvableAlgorithm`.

The algorithms of the family (IPPO, MADDPG, MATD3) fill in the methods marked "to
implement"; the shapes below are the contract the multi-agent training loops use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from gymnasium import spaces

from agilerl.algorithms.core.evolvable import EvolvableAlgorithm
from agilerl.components.observations import map_tree
from agilerl.files import checkpoints

#: Per agent id: a batch of one agent's observations (or actions, masks, flags).
PerAgent = dict[str, Any]


def agent_group(agent_id: str) -> str:
    """The group of an agent id: the id without a trailing ``_<number>``
    (``speaker_0`` -> ``speaker``); an id without one is a group of its own."""
    head, sep, tail = agent_id.rpartition("_")
    return head if sep and head and tail.isdigit() else agent_id


def _checked_spaces(value: Any, name: str) -> dict[str, spaces.Space]:
    if not isinstance(value, Mapping) or not value:
        raise TypeError(f"{name} must be a non-empty mapping of agent id -> space, got {value!r}")
    for agent_id, space in value.items():
        if not isinstance(agent_id, str):
            raise TypeError(f"{name}: agent ids must be strings, got {agent_id!r}")
        if not isinstance(space, spaces.Space):
            raise TypeError(f"{name}[{agent_id!r}] must be a gymnasium space, got {space!r}")
    return dict(value)


class MultiAgentRLAlgorithm(EvolvableAlgorithm):
    """Base of multi-agent algorithms (see the module docstring)."""

    construction_layout: ClassVar[Mapping[str, Any]] = {
        "observation_spaces": checkpoints.MapOf(spaces.Space),
        "action_spaces": checkpoints.MapOf(spaces.Space),
    }

    def __init__(
        self,
        observation_spaces: Mapping[str, spaces.Space],
        action_spaces: Mapping[str, spaces.Space],
        index: int = 0,
        **options: Any,
    ) -> None:
        """``options``: the bound spec's hyperparameters and the keywords every agent
        takes (:class:`EvolvableAlgorithm`: ``hp_config``, ``net_config``, ``device``,
        ``accelerator``, ``seed``)."""
        self.observation_spaces = _checked_spaces(observation_spaces, "observation_spaces")
        self.action_spaces = _checked_spaces(action_spaces, "action_spaces")
        if set(self.observation_spaces) != set(self.action_spaces):
            only_obs = sorted(set(self.observation_spaces) - set(self.action_spaces))
            only_act = sorted(set(self.action_spaces) - set(self.observation_spaces))
            raise ValueError(
                "observation_spaces and action_spaces must name the same agents: "
                f"no action space for {only_obs or 'none'}, "
                f"no observation space for {only_act or 'none'}"
            )
        #: Agent ids in the environment's order.
        self.agent_ids = list(self.observation_spaces)
        #: Group -> its agent ids; a group shares one policy.
        self.groups: dict[str, list[str]] = {}
        for agent_id in self.agent_ids:
            self.groups.setdefault(agent_group(agent_id), []).append(agent_id)
        for group, members in self.groups.items():
            first = members[0]
            for other in members[1:]:
                for kind, table in (
                    ("observation", self.observation_spaces),
                    ("action", self.action_spaces),
                ):
                    if table[other] != table[first]:
                        raise ValueError(
                            f"{kind}_spaces: agents {first!r} and {other!r} form group "
                            f"{group!r} and share its policy, but their {kind} spaces differ "
                            f"({table[first]} and {table[other]}); give them ids of "
                            "different groups"
                        )
        super().__init__(index, **options)

    def group_space(self, group: str, kind: str = "observation") -> spaces.Space:
        """The observation (or ``kind="action"``) space every agent of ``group`` has."""
        table = self.observation_spaces if kind == "observation" else self.action_spaces
        return table[self.groups[group][0]]

    def _repr_fields(self) -> dict[str, str]:
        return {"agents": repr(self.agent_ids)}

    # -- to implement (the multi-agent loops call these) ---------------------------------
    def get_action(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """Actions of every agent present in ``obs`` (a batch per agent id), in each
        agent's own action space; masks come from ``infos`` or the observations."""
        raise NotImplementedError

    def explore(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """Exploratory actions for one vector step of training (the agent's own noise or
        sampling), shaped as :meth:`get_action`'s."""
        raise NotImplementedError

    def predict(self, obs: PerAgent, infos: PerAgent | None = None) -> PerAgent:
        """The team's deterministic actions for one step of one (unvectorised) parallel
        environment: ``obs`` (and ``infos``) per agent id, unbatched, as
        ``ParallelEnv.reset`` and ``step`` give them; an action per agent present."""
        batched = {agent: map_tree(lambda x: np.asarray(x)[None], o) for agent, o in obs.items()}
        given = None
        if infos is not None:
            given = {
                agent: (
                    {**info, "action_mask": np.asarray(info["action_mask"])[None]}
                    if isinstance(info, Mapping) and info.get("action_mask") is not None
                    else info
                )
                for agent, info in infos.items()
            }
        with torch.no_grad():
            actions = self.get_action(batched, given)
        return {agent: np.asarray(action)[0] for agent, action in actions.items()}

    def episodes_ended(self, ended: np.ndarray) -> None:
        """Sub-environments (a boolean row per env) whose episodes just ended."""

    def test(
        self, env: Any, max_steps: int | None = None, loop: int = 1, seed: Any = None
    ) -> float:
        """Mean evaluation score on a vectorised parallel ``env``: the team's return
        (every agent's rewards summed) per episode, appended to ``fitness``; the
        implementations leave each group's in ``group_fitness``."""
        raise NotImplementedError
