"""How a cohort acts for one vector step: one forward of the stacked networks for every
agent's observations, then each agent's own exploration on its block of the outputs;
agents still warming up with ``training.warmup_actions: uniform`` draw uniform actions
instead, from their own generators, and call nothing of their exploration (so they draw
what they would draw alone)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from agilerl.observations import split_tree

#: ``own_action(agent, obs, mask, output)``: one agent's actions from its block of the
#: cohort's observations, action masks and forward output.
OwnAction = Callable[[Any, Any, Any, Any], np.ndarray]


def cohort_actions(
    agents: Sequence[Any],
    obs: Any,
    mask: Any,
    uniform: np.ndarray,
    forward: Callable[[Any], Any],
    own_action: OwnAction,
) -> np.ndarray:
    """The actions of ``agents`` for ``obs`` (agent ``p``'s the ``p``-th block; ``mask``
    its action masks' rows alike, or None): ``own_action`` on each block of
    ``forward(obs)``, or the agent's ``uniform_actions`` where ``uniform[p]`` holds (no
    forward at all when every agent's does)."""
    count = len(agents)
    blocks = split_tree(obs, count)
    masks = [None] * count if mask is None else split_tree(mask, count)
    outputs = [None] * count if uniform.all() else split_tree(forward(obs), count)
    return np.concatenate(
        [
            agent.uniform_actions(own, own_mask)
            if warming
            else own_action(agent, own, own_mask, output)
            for agent, own, own_mask, output, warming in zip(
                agents, blocks, masks, outputs, uniform, strict=True
            )
        ]
    )
