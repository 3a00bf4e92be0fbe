"""A family's side of the cohort question: the :class:`~agilerl.training.cohorting.
Cohorting` of a run, from what the family knows of it (``training.cohorts``, where its
environment comes from, the memory its agents share). What is decided from it, and the
one case that trains agents one at a time for their environment's sake (an environment
object given in Python), is :mod:`agilerl.training.cohorting`'s."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from agilerl.families.python_env import PythonEnv
from agilerl.training.cohorting import Cohorting


def env_copies(spec: Any, source: PythonEnv | None = None) -> bool:
    """Whether a cohort can give each of its agents copies of the run's environment:
    made from its section ``spec`` (a named environment, an entry point), or from
    ``source``, the environment given in Python, where that is a factory. An environment
    object is one copy, the run's own; no ``spec`` (a training function called without
    ``env_spec``) is nothing to copy from."""
    return spec is not None and (source is None or source.copies is None)


def run_cohorting(
    enabled: bool,
    spec: Any,
    source: PythonEnv | None,
    memory: type | None = None,
    views: Collection[type] = (),
) -> Cohorting:
    """The :class:`~agilerl.training.cohorting.Cohorting` of a run that steps copies of
    its environment: ``enabled`` (``training.cohorts``), the copies :func:`env_copies`
    finds, ``memory``, the class of the replay memory the agents share (None: none), and the memory classes
    the family's cohort turn has a view of (``views``)."""
    return Cohorting(
        enabled=enabled,
        copies=env_copies(spec, source),
        memory=memory,
        views=frozenset(views),
    )
