"""Environments given in Python rather than named: an environment object (one copy) or a
factory (a class or function that makes one, called once per copy).

``LocalTrainer(..., env=make_corridor)`` trains on it as on a registered id: the
environment section (``num_envs``, ``vectorize``, ``wrappers``, ...) still applies, and
its ``name`` is the object's label. What a run needs to copy the environment it cannot do
with an object: an object serves ``num_envs: 1`` alone, and agents train one at a time
(cohorts step an environment per agent: :mod:`agilerl.training.cohorting`); a factory's
runs train in cohorts as a named environment's do. Nothing is recorded that could
rebuild it, so a saved agent is evaluated on it in Python (``evaluate_agent(agent, env)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agilerl.training.errors import TrainerError


@dataclass(frozen=True)
class PythonEnv:
    """Where a run's environments come from when given in Python."""

    #: Called with the environment section's ``config`` as keyword arguments.
    factory: Callable[..., Any]
    #: The object itself, when an environment object was given (None for a factory).
    instance: Any
    #: What the run calls it: the class or function name.
    label: str

    @classmethod
    def of(cls, value: Any) -> PythonEnv:
        """A factory is anything callable that is not itself an environment (a class, a
        function, a ``functools.partial``); anything else is an environment object."""
        if callable(value) and not _is_environment(value):
            name = getattr(value, "__name__", None) or type(value).__name__
            return cls(value, None, name)
        return cls(lambda: value, value, type(value).__name__)

    @property
    def copies(self) -> int | None:
        """How many copies it can give: one for an object, any number (None) otherwise."""
        return 1 if self.instance is not None else None


def _is_environment(value: Any) -> bool:
    """Whether ``value`` is an environment object (Gymnasium's or PettingZoo's API), which
    may be callable without being a factory."""
    return all(hasattr(value, name) for name in ("reset", "step")) and not isinstance(value, type)


def close_made(env: Any, source: PythonEnv | None) -> None:
    """Close ``env``, a copy a check made, unless it holds the environment object given in
    Python: that one is the run's single copy, and the user's."""
    if source is None or source.instance is None:
        env.close()


class CopiedPythonEnv:
    """The section of a family whose runs copy their environment (``num_envs`` copies,
    Gymnasium's and PettingZoo's): mixed into the family, ahead of
    :class:`~agilerl.families.base.Family`."""

    def python_env_section(self, source: PythonEnv, section: dict[str, Any]) -> dict[str, Any]:
        """``section`` named after ``source``, its copies in this process unless told
        otherwise; an object is one copy."""
        if source.copies == 1:
            if section.get("num_envs", 1) != 1:
                raise TrainerError(
                    f"environment.num_envs: {section['num_envs']} copies of one environment "
                    f"object ({source.label}): give env= a factory (a class or a function that "
                    "makes one) for more than one"
                )
            section["num_envs"] = 1
        section.setdefault("sync", True)
        return {**section, "name": source.label}
