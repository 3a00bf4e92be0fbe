"""One PettingZoo parallel environment from a :class:`~agilerl.models.env.PzEnvSpec`.

``name`` is a module exposing ``parallel_env`` (``mpe2.simple_speaker_listener_v4``),
called with ``config`` as keyword arguments; ``entrypoint`` instead names the callable
that builds one. Either may give an AEC environment: one that declares itself
parallelizable is converted (PettingZoo's ``aec_to_parallel``), a turn-based one is
refused with the reason. Wrappers are applied innermost first. The engine names agents
by strings: an environment whose ids are not strings (integers) is wrapped so they
become ``str(id)`` (:class:`StringIds`), and mapped back when it acts.

Every problem is an :class:`~agilerl.families.environments.EnvironmentSpecError` naming the
field, never a traceback from inside PettingZoo.
"""

from __future__ import annotations

import importlib
import reprlib
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import aec_to_parallel

from agilerl.components.observations import channels_first, channels_first_space, channels_last
from agilerl.families.environments import (
    EnvironmentCallError,
    EnvironmentSpecError,
    call_environment,
    call_factory,
    import_target,
)
from agilerl.families.python_env import PythonEnv
from agilerl.guards.user_code import UserCodeError, call_user
from agilerl.resources.distribution import install_command

#: Module prefixes that moved out of PettingZoo, and where they live now: a manifest
#: naming the old place is told the new one (pettingzoo 1.26 dropped its MPE copy).
MOVED = {"pettingzoo.mpe": "mpe2"}
#: A key of the vector env's infos that no agent may be called.
RESERVED_IDS = ("__final__",)


def _moved(name: str) -> str | None:
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


def _module_factory(name: str) -> Any:
    """``<name>.parallel_env`` (or, for an AEC-only module, ``<name>.env``)."""
    new = _moved(name)
    if new is not None:
        raise EnvironmentSpecError(
            f"environment.name: {name!r}: PettingZoo no longer ships this environment; it "
            f"lives in the {new.split('.')[0]} package now: name {new!r} "
            f"({install_command('multiagent')})"
        )
    try:
        module = call_user(importlib.import_module, name, what=f"environment.name {name}")
    except ModuleNotFoundError as err:
        missing = err.name or name
        hint = (
            f" ({install_command('multiagent')} installs pettingzoo and mpe2)"
            if missing.split(".")[0] in ("pettingzoo", "mpe2")
            else ""
        )
        raise EnvironmentSpecError(
            f"environment.name: {name!r} cannot be imported: no module {missing!r}{hint}"
        ) from None
    except UserCodeError:
        raise  # names the code and the exit already
    except Exception as err:  # the environment's own import failed (a missing extra)
        raise EnvironmentSpecError(
            f"environment.name: importing {name!r} raised {type(err).__name__}: {err}"
        ) from err
    for attribute in ("parallel_env", "env"):
        factory = getattr(module, attribute, None)
        if callable(factory):
            return factory
    raise EnvironmentSpecError(
        f"environment.name: module {name!r} has neither parallel_env nor env: name a "
        "PettingZoo environment module, or give environment.entrypoint"
    )


def as_parallel(env: Any, where: str) -> ParallelEnv:
    """``env`` as a parallel environment: as it is, or converted from AEC where the AEC
    environment says that is safe (``metadata["is_parallelizable"]``)."""
    if isinstance(env, ParallelEnv):
        return env
    if isinstance(env, AECEnv):
        if not (getattr(env, "metadata", None) or {}).get("is_parallelizable", False):
            raise EnvironmentSpecError(
                f"{where}: {type(env.unwrapped).__name__} is a turn-based (AEC) environment "
                "that does not declare metadata['is_parallelizable']: its agents act one "
                "after another, which the parallel API cannot express; multi-agent "
                "training needs a PettingZoo ParallelEnv"
            )
        return aec_to_parallel(env)
    raise EnvironmentSpecError(
        f"{where}: built {type(env).__name__} {reprlib.repr(env)}, not a PettingZoo "
        "ParallelEnv or AECEnv"
    )


class StringIds(ParallelEnv):
    """A parallel environment whose agent ids are turned into strings (``str(id)``);
    actions given by string id go back to the environment under its own ids."""

    def __init__(self, env: ParallelEnv) -> None:
        self.env = env
        self._to_own = {str(agent): agent for agent in env.possible_agents}
        self.possible_agents = list(self._to_own)
        self.metadata = getattr(env, "metadata", {})
        self.agents: list[str] = []

    def _named(self, table: dict[Any, Any]) -> dict[str, Any]:
        return {str(agent): value for agent, value in table.items()}

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(self._to_own[agent])

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(self._to_own[agent])

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        self.agents = [str(a) for a in self.env.agents]
        return self._named(obs), self._named(infos)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        out = self.env.step({self._to_own[a]: value for a, value in actions.items()})
        self.agents = [str(a) for a in self.env.agents]
        return tuple(self._named(table) for table in out)  # type: ignore[return-value]

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped


class ParallelWrapper(ParallelEnv):
    """A parallel environment around another that hands everything on; subclasses
    change what they wrap (the engine's wrappers below)."""

    def __init__(self, env: ParallelEnv) -> None:
        self.env = env
        self.possible_agents = list(env.possible_agents)
        self.metadata = getattr(env, "metadata", {})

    @property
    def agents(self) -> list[str]:  # type: ignore[override]
        return self.env.agents

    def observation_space(self, agent: str) -> Any:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> Any:
        return self.env.action_space(agent)

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        return self.env.reset(seed=seed, options=options)

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        return self.env.step(actions)

    def render(self) -> Any:
        return self.env.render()

    def state(self) -> Any:
        return self.env.state()

    def close(self) -> None:
        self.env.close()

    @property
    def unwrapped(self) -> Any:
        return self.env.unwrapped


class GuardedParallelEnv(ParallelWrapper):
    """The outermost wrapper of every parallel environment :func:`make_parallel_env`
    builds: ``reset`` and ``step`` go through
    :func:`~agilerl.families.environments.call_environment` (time limit, one-line
    errors), and an observation whose shape is not its agent's observation space's is
    refused there, naming the agent and the call, instead of failing later in a stack."""

    def __init__(self, env: ParallelEnv, label: str) -> None:
        super().__init__(env)
        self.label = label
        # the labels once, not a string built per step
        self.on_reset, self.on_step = f"{label}: reset", f"{label}: step"
        self._shapes: dict[str, tuple[int, ...] | None] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def _shape(self, agent: str) -> tuple[int, ...] | None:
        if agent not in self._shapes:
            space = self.env.observation_space(agent)
            self._shapes[agent] = space.shape if isinstance(space, spaces.Box) else None
        return self._shapes[agent]

    def _check(self, method: str, obs: Any) -> None:
        if not isinstance(obs, dict):
            raise EnvironmentCallError(
                f"{self.label}: {method} returned observations of type "
                f"{type(obs).__name__}, not a dict of agent -> observation"
            )
        for agent, value in obs.items():
            expected = self._shape(agent)
            if expected is not None and np.shape(value) != expected:
                raise EnvironmentCallError(
                    f"{self.label}: {method} returned an observation of shape "
                    f"{np.shape(value)} for agent {agent!r}, whose observation space has "
                    f"shape {expected}"
                )

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        out = call_environment(self.on_reset, self.env.reset, seed=seed, options=options)
        self._check("reset", out[0])
        return out

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        out = call_environment(self.on_step, self.env.step, actions)
        self._check("step", out[0])
        return out


class ChannelsFirst(ParallelWrapper):
    """The agents' images observed channels last, ``(H, W, C)``, handed on channels
    first, as the CNN encoder takes them (:func:`agilerl.components.observations.channels_last`);
    other agents' observations pass unchanged."""

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__(env)
        self._turned = {a for a in env.possible_agents if channels_last(env.observation_space(a))}

    def _turn(self, obs: dict[str, Any]) -> dict[str, Any]:
        return {a: channels_first(o) if a in self._turned else o for a, o in obs.items()}

    def observation_space(self, agent: str) -> Any:
        space = self.env.observation_space(agent)
        return channels_first_space(space) if agent in self._turned else space

    def reset(self, seed: int | None = None, options: Any = None) -> tuple[dict, dict]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._turn(obs), infos

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        obs, *rest = self.env.step(actions)
        return (self._turn(obs), *rest)  # type: ignore[return-value]


def string_ids(env: ParallelEnv, where: str) -> ParallelEnv:
    """``env`` with string agent ids (wrapped in :class:`StringIds` where needed);
    refuses ids that collide as strings or use a reserved name."""
    ids = list(env.possible_agents)
    names = [str(a) for a in ids]
    if len(set(names)) != len(names):
        raise EnvironmentSpecError(
            f"{where}: agent ids {ids!r} are not distinct as strings, and the engine names "
            "agents by strings"
        )
    reserved = sorted(set(names) & set(RESERVED_IDS))
    if reserved:
        raise EnvironmentSpecError(f"{where}: agent id {reserved[0]!r} is reserved by the engine")
    if all(isinstance(a, str) for a in ids):
        return env
    return StringIds(env)


def make_parallel_env(spec: Any, source: PythonEnv | None = None) -> ParallelEnv:
    """One (unvectorised) parallel environment of ``spec`` with string agent ids; from
    ``source`` where the run's environment was given in Python."""
    kwargs = dict(spec.config or {})
    if source is not None:
        where, label = "env", source.label
        factory = source.factory
    elif spec.entrypoint is not None:
        where, label = "environment.entrypoint", spec.entrypoint
        factory = import_target(spec.entrypoint, where, spec.path)
    else:
        where, label = "environment.name", spec.name
        factory = _module_factory(spec.name)
    env = call_factory(factory, (), kwargs, where, label, "environment.config")
    env = as_parallel(env, where)
    for i, wrapper in enumerate(spec.wrappers or []):
        at = f"environment.wrappers.{i}"
        target = wrapper if isinstance(wrapper, str) else wrapper.wrapper
        options = {} if isinstance(wrapper, str) else dict(wrapper.kwargs)
        cls = import_target(target, at, spec.path)
        env = as_parallel(call_factory(cls, (env,), options, at, target, at), at)
    if not getattr(env, "possible_agents", None):
        raise EnvironmentSpecError(f"{where}: {label} has no possible_agents")
    env = string_ids(env, where)
    if any(channels_last(env.observation_space(agent)) for agent in env.possible_agents):
        env = ChannelsFirst(env)
    return GuardedParallelEnv(env, f"{where} {label}")
