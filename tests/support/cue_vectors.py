"""The cue game (:mod:`agilerl.testing.cooperative`) as a vector env, and the actions of
its teams, for the tests of the multi-agent environment side and its buffers."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from agilerl.families.multi_agent.vector import make_vector_env
from agilerl.models.env import PzEnvSpec

COOP = "agilerl.testing.cooperative"
#: The cue game's integer ids, by role.
ROLES = {"0": "seer_0", "1": "blind_0", "2": "scout_0"}


def spec(**fields):
    fields.setdefault("name", COOP)
    fields.setdefault("sync", True)
    return PzEnvSpec(**fields)


def vec(n=3, **fields):
    return make_vector_env(spec(num_envs=n, **fields))


def cue_actions(env, obs, infos, rule="optimal"):
    """Actions of every agent for a batch: the optimal team (the seer names the cue, the
    blind agent repeats the seer's last action), or the first allowed action."""
    out = {}
    for agent in env.agent_ids:
        role = ROLES.get(agent, agent)
        space = env.observation_spaces[agent]
        mask = infos[agent].get("action_mask")
        value = obs[agent]["observation"] if isinstance(space, spaces.Dict) else obs[agent]
        if rule == "optimal" and role == "seer_0":
            out[agent] = value.argmax(axis=1)
        elif rule == "optimal" and role == "blind_0":
            seen = value.argmax(axis=1)  # the seer's last action; n: the first step
            guess = np.zeros_like(seen) if mask is None else mask.argmax(axis=1)
            out[agent] = np.where(seen == env.action_spaces[agent].n, guess, seen)
        elif mask is not None:
            out[agent] = mask.argmax(axis=1)
        else:
            out[agent] = np.zeros(env.num_envs, dtype=np.int64)
    return out
