"""The environments a cohort (:mod:`agilerl.cohorts`) steps: one vector env of ``P x
num_envs`` copies for its P agents, agent ``p``'s the ``p``-th block, built in this
process, so the collection code of one agent (which acts on a vector env) runs unchanged
for the cohort, and the cohort's agents are evaluated together
(:meth:`~agilerl.families.single_agent.scoring.Scoring.evaluation`).

Each block is reset with the seeds its agent's own turn would use and draws its own
episodes, so what an agent experiences does not depend on the other agents: natively
vectorised copies are one native environment whose blocks restart from generators of
their own (:meth:`~agilerl.families.single_agent.native.SameStepAutoreset.reset_each`;
the whole cohort's physics is one step), other copies a vector env per agent stepped
together (:class:`JoinedEnvs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

import numpy as np

from agilerl.components.observations import concat_tree
from agilerl.families.python_env import PythonEnv
from agilerl.families.single_agent.envs import make_vector_env
from agilerl.families.single_agent.vectorize import resolve_vectorize


def in_process(spec: Any) -> Any:
    """``spec`` with its copies stepped in this process (natively where the environment
    has a vector implementation, else synchronously): a cohort's environments. A worker
    process per copy (``async``) serves one agent's ``num_envs``; a cohort has ``P x
    num_envs`` copies, and as many processes would outnumber any machine's cores. A spec
    that names ``native`` or ``sync`` keeps it."""
    if spec.vectorize in ("native", "sync"):
        return spec
    return spec.model_copy(update={"sync": True, "vectorize": None})


class CohortEnv(Protocol):
    """What a cohort steps (:data:`JOINS` builds one): a vector env of ``P x num_envs``
    copies whose blocks are reset each with their own seed."""

    num_envs: int

    def reset_each(self, seeds: Sequence[int]) -> tuple[Any, dict[str, Any]]: ...

    def step(
        self, actions: Any
    ) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]: ...

    def close(self) -> None: ...


class CohortEnvs:
    """The environments of a run's cohorts, of one spec: for a cohort of P agents, one
    vector env of ``P x num_envs`` copies, agent ``p``'s the ``p``-th block, reset with
    :meth:`reset_each <JoinedEnvs.reset_each>` (each block with the seed its agent's own
    turn would use). How the copies are joined depends on how they run
    (:data:`JOINS`); what is built is kept for the run (building costs as much as
    thousands of steps). ``source``: the factory given in Python the copies are made
    from, where the run's environment was given so."""

    def __init__(self, spec: Any, source: PythonEnv | None = None) -> None:
        self.spec = in_process(spec)
        self.source = source
        self.join = JOINS[resolve_vectorize(self.spec).kind]
        self.built: dict[int, CohortEnv] = {}

    def take(self, count: int) -> CohortEnv:
        """The joined environments of a cohort of ``count`` agents."""
        if count not in self.built:
            self.built[count] = self.join(self.spec, count, self.source)
        return self.built[count]

    def close(self) -> None:
        for env in self.built.values():
            env.close()
        self.built.clear()


class OwnEnv:
    """The run's own vector env as the :class:`CohortEnv` of an agent alone: a turn of
    one steps and evaluates on the environment the run built (whatever its
    vectorisation, an environment object given in Python), reset with the agent's one
    seed. Closing it is the run's."""

    def __init__(self, env: Any) -> None:
        self.env = env
        self.num_envs = int(env.num_envs)

    def reset_each(self, seeds: Sequence[int]) -> tuple[Any, dict[str, Any]]:
        (seed,) = seeds
        return self.env.reset(seed=seed)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        return self.env.step(actions)

    def close(self) -> None:
        """Nothing: the run closes its own environment."""


class JoinedEnvs:
    """Vector envs of one spec stepped as one vector env (module docstring): actions are
    split into the envs' blocks, and observations, rewards, flags and infos joined in
    order. Resetting is left to each env (each is seeded by its own agent's slot)."""

    def __init__(self, envs: Sequence[Any]) -> None:
        self.envs = list(envs)
        self.sizes = [int(env.num_envs) for env in self.envs]
        self.num_envs = sum(self.sizes)

    def close(self) -> None:
        for env in self.envs:
            env.close()

    def reset_each(self, seeds: Sequence[int]) -> tuple[Any, dict[str, Any]]:
        """Every env reset with its own seed; their first observations and infos joined."""
        resets = [env.reset(seed=seed) for env, seed in zip(self.envs, seeds, strict=True)]
        return concat_tree([r[0] for r in resets]), join_infos([r[1] for r in resets], self.sizes)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        bounds = np.cumsum([0, *self.sizes])
        steps = [
            env.step(actions[start:end])
            for env, start, end in zip(self.envs, bounds[:-1], bounds[1:], strict=True)
        ]
        return (
            concat_tree([s[0] for s in steps]),
            np.concatenate([np.asarray(s[1], dtype=np.float64) for s in steps]),
            np.concatenate([np.asarray(s[2], dtype=bool) for s in steps]),
            np.concatenate([np.asarray(s[3], dtype=bool) for s in steps]),
            join_infos([s[4] for s in steps], self.sizes),
        )


def _one_native_env(spec: Any, count: int, source: PythonEnv | None) -> CohortEnv:
    """One native environment of every agent's copies, in blocks (its ``reset_each``:
    :class:`~agilerl.families.single_agent.native.SameStepAutoreset`): the physics of
    the whole cohort is one step, and each block draws its agent's own episodes."""
    return cast(CohortEnv, make_vector_env(spec, count * spec.num_envs, source))


def _joined_copies(spec: Any, count: int, source: PythonEnv | None) -> JoinedEnvs:
    """A vector env of ``num_envs`` copies per agent, stepped together."""
    return JoinedEnvs([make_vector_env(spec, source=source) for _ in range(count)])


#: How a cohort's copies are joined, by how they run (:func:`in_process` leaves no
#: ``async``): natively, one environment of all of them; synchronously, an environment
#: per agent stepped as one. Each builder is given the spec, the cohort's size and the
#: factory given in Python (None for a named environment).
JOINS: dict[str, Callable[[Any, int, PythonEnv | None], CohortEnv]] = {
    "native": _one_native_env,
    "sync": _joined_copies,
}


def join_infos(infos: Sequence[dict[str, Any]], sizes: Sequence[int]) -> dict[str, Any]:
    """Vector-env infos of envs of ``sizes`` copies as the info of one env of all their
    copies, in order. Gymnasium's layout: a key holds one entry per copy and ``_key``
    marks the copies that reported it; a key some env did not report is filled with its
    "not reported" entries (False marks, ``None`` objects, zeros), as Gymnasium fills
    the copies of one env; nested infos (``final_info``) are joined the same way."""
    joined: dict[str, Any] = {}
    for key in dict.fromkeys(k for info in infos for k in info):
        parts = [info.get(key) for info in infos]
        present = [part for part in parts if part is not None]
        if all(isinstance(part, dict) for part in present):
            joined[key] = join_infos([part or {} for part in parts], sizes)
            continue
        like = np.asarray(present[0])
        joined[key] = np.concatenate(
            [
                np.asarray(part) if part is not None else _unreported(like, size)
                for part, size in zip(parts, sizes, strict=True)
            ]
        )
    return joined


def _unreported(like: np.ndarray, size: int) -> np.ndarray:
    """``size`` entries of a key no copy reported, shaped and typed like ``like``'s."""
    if like.dtype == object:
        return np.full(size, None, dtype=object)
    return np.zeros((size, *like.shape[1:]), dtype=like.dtype)
