"""Natively vectorised Gymnasium environments (``environment.vectorize: native``) with the
same-step autoreset the loops need.

Gymnasium's native vector environments (``CartPoleVectorEnv``) autoreset on the *next*
step: the step that ends an episode returns its last observation, and the following
``step`` ignores that copy's action and returns its first observation. The loops expect
what ``SyncVectorEnv(..., autoreset_mode=AutoresetMode.SAME_STEP)`` gives, and
:class:`SameStepAutoreset` gives exactly that over a native environment: the step that
ends an episode already returns the next episode's first observation, with the last one
in ``info["final_obs"]`` (an object array, ``None`` where no episode ended) and the
mask in ``info["_final_obs"]``, plus ``info["final_info"]`` (``{}``: a native
environment reports no per-copy info) and its mask ``info["_final_info"]``; rewards are
float64, as the other vectorisations give them.

Seeding differs from ``SyncVectorEnv``: there, copy ``i`` of ``reset(seed=s)`` is seeded
``s + i``; here one generator, seeded ``s``, draws every copy's start and every later
episode's, so a seed reproduces the whole run but not Sync's individual episodes.

A native environment is Gymnasium's own code, so its steps do not go through
:class:`~agilerl.families.single_agent.envs.UserEnv`'s guard (the time limit and
one-line errors are for the user's code); only its construction, which reads the
user's ``environment.config``, reports a failure as a line naming that field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from agilerl.families.single_agent.vectorize import RowReset


class SameStepAutoreset(VectorWrapper):
    """A native vector environment whose ended copies restart in the step that ends them
    (``reset_rows`` starts new episodes in some rows at once: :data:`~agilerl.families.single_agent.vectorize.
    ROW_RESETS`).

    :meth:`reset_each` makes it the native environments of several agents in one (a
    cohort's, :mod:`~agilerl.families.single_agent.cohort_envs`): its rows split into
    equal blocks, each started and restarted from a generator of its own, so block ``b``
    draws exactly the episodes an environment of its copies alone, reset with seed
    ``seeds[b]``, would draw; the physics of every block is one step.
    """

    def __init__(self, env: VectorEnv, reset_rows: RowReset) -> None:
        super().__init__(env)
        self.reset_rows = reset_rows
        self.metadata = {**env.metadata, "autoreset_mode": AutoresetMode.SAME_STEP}
        #: The generator each block of rows restarts from, in order (:meth:`reset_each`);
        #: after a plain reset, one block: the environment's own generator.
        self.generators: list[np.random.Generator] = []

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.generators = [self.env.np_random]
        return obs, info

    def reset_each(self, seeds: Sequence[int]) -> tuple[np.ndarray, dict[str, Any]]:
        """Every block of ``num_envs // len(seeds)`` rows started as that many copies
        alone, reset with its seed, would start (class docstring)."""
        size, extra = divmod(self.num_envs, len(seeds))
        if extra or not size:
            raise ValueError(f"{self.num_envs} copies do not split into {len(seeds)} equal blocks")
        self.env.reset(seed=int(seeds[0]))  # the rows' bookkeeping, overwritten below
        self.generators = [seeding.np_random(int(seed))[0] for seed in seeds]
        starts = [
            self.reset_rows(self.env, np.arange(b * size, (b + 1) * size), rng)
            for b, rng in enumerate(self.generators)
        ]
        return np.concatenate(starts), {}

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        reward = np.asarray(reward, dtype=np.float64)
        ended = np.logical_or(terminated, truncated)
        if not ended.any():
            return obs, reward, terminated, truncated, info
        rows = np.flatnonzero(ended)
        final = np.full(self.num_envs, None, dtype=object)
        for i in rows:
            final[i] = obs[i].copy()
        obs = obs.copy()
        size = self.num_envs // len(self.generators)
        block = rows // size
        for b in np.unique(block):
            own = rows[block == b]
            obs[own] = self.reset_rows(self.env, own, self.generators[b])
        info = {
            **info,
            "final_obs": final,
            "_final_obs": ended.copy(),
            "final_info": {},
            "_final_info": ended.copy(),
        }
        return obs, reward, terminated, truncated, info
