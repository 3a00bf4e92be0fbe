"""How the ``num_envs`` copies of a Gymnasium environment section run: the choice of
``environment.vectorize`` (``native``, ``sync`` or ``async``), its refusals, and the line
``agilerl validate`` prints about it.

The choice is made here, apart from the builders (:mod:`agilerl.families.single_agent.envs`),
because ``agilerl validate`` states it and must stay light: this module imports no torch,
and gymnasium only when a name is looked up in its registry (which imports no user code:
an id registered by the user's own module, ``pkg.mod:Env-v0``, is simply not found, so
it is never native).

* ``native``: one environment that steps every copy at once (Gymnasium's vector entry
  point for the id), given same-step autoreset by
  :class:`~agilerl.families.single_agent.native.SameStepAutoreset`. Only the entry points
  of :data:`ROW_RESETS` have it (Gymnasium's native environments autoreset on the *next*
  step; the loops need it on the same one).
* ``sync``: ``SyncVectorEnv``, every copy in this process.
* ``async``: ``AsyncVectorEnv``, one worker process per copy.
* unset (null): ``native`` where the environment has it, else ``sync`` when
  ``environment.sync`` is true and ``async`` when it is not.

``environment.sync: true`` beside a ``vectorize`` of ``native`` or ``async`` is refused
(the two fields would disagree, and neither should silently win); ``sync: false`` is the
default and says nothing once ``vectorize`` is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


class VectorizeError(ValueError):
    """An ``environment.vectorize`` that cannot be honoured; one line naming the field."""


@dataclass(frozen=True)
class Vectorisation:
    """One value of ``environment.vectorize``: whether its copies run in worker processes
    (the pre-flight counts their memory; the trainer reports them) and how it is said."""

    kind: str
    workers: bool
    how: str


#: ``environment.vectorize`` -> what it means.
VECTORISATIONS: dict[str, Vectorisation] = {
    "native": Vectorisation("native", False, "vectorised natively"),
    "sync": Vectorisation("sync", False, "in this process by SyncVectorEnv"),
    "async": Vectorisation("async", True, "one worker process each by AsyncVectorEnv"),
}

#: ``environment.sync`` -> the vectorisation when ``vectorize`` is unset and the
#: environment is not native.
BY_SYNC_FLAG = {True: "sync", False: "async"}


def _reset_cartpole_rows(env: Any, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Start new episodes in ``rows`` of a ``CartPoleVectorEnv`` now, their starts drawn
    from ``rng``: what its own ``step`` would do one step later (next-step autoreset),
    from the same bounds, and its pending reset of those rows cleared. With the env's own
    generator this continues its episodes; with a generator seeded ``s`` over all of an
    ``n``-copy env's rows it is that env's ``reset(seed=s)``. Returns their observations."""
    env.state[:, rows] = rng.uniform(low=env.low, high=env.high, size=(4, rows.size))
    env.steps[rows] = 0
    env.prev_done[rows] = False
    return env.state[:, rows].T.astype(np.float32)


#: A native vector environment's reset of some rows: ``(env, row indices, generator) ->
#: their first observations``, the rows' starts drawn from the generator.
RowReset = Callable[[Any, np.ndarray, np.random.Generator], np.ndarray]

#: The natively vectorised environments this engine steps, by Gymnasium vector entry
#: point: how to start new episodes in some of their rows at once (what same-step
#: autoreset needs). gymnasium 1.4 registers CartPole-v0 and CartPole-v1 with this one;
#: its other vector entry points (``phys2d/*``, on jax) have no row reset here.
ROW_RESETS: dict[str, RowReset] = {
    "gymnasium.envs.classic_control.cartpole:CartPoleVectorEnv": _reset_cartpole_rows,
}


def native_entry_point(name: str) -> str | None:
    """The vector entry point of Gymnasium id ``name`` when this engine can step it
    natively (:data:`ROW_RESETS`); None otherwise (unknown ids too: building reports them)."""
    import gymnasium as gym

    spec = gym.registry.get(name)
    entry = None if spec is None else spec.vector_entry_point
    return entry if isinstance(entry, str) and entry in ROW_RESETS else None


def native_ids() -> list[str]:
    """Every registered id this engine steps natively."""
    import gymnasium as gym

    return sorted(name for name in gym.registry if native_entry_point(name) is not None)


def _native_refusal(spec: Any) -> str | None:
    """Why ``spec``'s copies cannot run natively, or None. The first reason that holds."""
    if spec.entrypoint is not None:
        return (
            f"environment.entrypoint {spec.entrypoint} builds one environment at a time; "
            "only a registered Gymnasium id with a vector entry point steps its copies at once"
        )
    if spec.wrappers:
        return (
            "environment.wrappers wrap one environment each, and a native environment is "
            "every copy at once"
        )
    if spec.atari is not None:
        return (
            "environment.atari wraps one environment each, and a native environment is "
            "every copy at once"
        )
    if native_entry_point(spec.name) is None:
        known = ", ".join(native_ids())
        return f"{spec.name!r} has no native vector environment here (those that do: {known})"
    return None


def resolve_vectorize(spec: Any) -> Vectorisation:
    """What the copies of environment section ``spec`` (a ``GymEnvSpec`` or an
    ``OfflineEnvSpec``) run as; a :class:`VectorizeError` when the section asks for what
    cannot be."""
    asked = spec.vectorize
    # (``sync: true`` beside ``native`` or ``async`` is refused by the schema's own rule.)
    if asked == "native":
        reason = _native_refusal(spec)
        if reason is not None:
            raise VectorizeError(
                f"environment.vectorize: 'native' is not available: {reason}; use 'sync' or 'async'"
            )
    if asked is None:
        asked = "native" if _native_refusal(spec) is None else BY_SYNC_FLAG[bool(spec.sync)]
    return VECTORISATIONS[asked]


def describe_vectorize(spec: Any) -> str:
    """The line ``agilerl validate`` prints for environment section ``spec``."""
    chosen = resolve_vectorize(spec)
    label = spec.entrypoint or spec.name
    copies = "1 copy" if spec.num_envs == 1 else f"{spec.num_envs:,} copies"
    source = "" if spec.vectorize is not None else ", the default"
    return f"environment: {label}, {copies}, {chosen.how} (vectorize: {chosen.kind}{source})"
