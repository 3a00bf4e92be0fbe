"""Whether the agents of a run train as cohorts, and which: decided here, once.

A run's agents share cohorts (:mod:`agilerl.cohorts`) where all of these hold:

* ``training.cohorts`` is true (the training functions' ``cohorts`` keyword);
* the environment gives every agent of a cohort its own copies: a named environment, an
  environment section, or a factory given in Python (``env=`` a class or a function)
  does; **an environment object given in Python** (``env=`` a ready environment) cannot
  be copied, and is the one case in which agents train one at a time for their
  environment's sake. A run that steps no environment while it trains (offline) needs no
  copies;
* the replay memory the agents share, if any, is of a class the family's cohort turn
  has a view of (:data:`~agilerl.cohorts.replay.LOCKSTEP_REPLAYS` for single agents, the
  multi-agent buffer for teams, a uniform buffer offline; a frame-storing buffer has
  none);
* and, per agent, :func:`~agilerl.cohorts.learners.can_join` (the algorithm declares
  that it learns in cohorts, ``learns_in_cohorts`` on its class; none of
  :data:`~agilerl.cohorts.learners.ALONE_IF` is set; every network can be stacked), and
  agents whose :func:`~agilerl.cohorts.learners.cohort_key` are equal form one cohort.

A family states the first three as a :class:`Cohorting` when it builds its turns
(:class:`~agilerl.training.evolution.Turns` carries it), :func:`~agilerl.training.
evolution.evolve` groups each generation's agents by :func:`cohorts`, and the pre-flight
asks :func:`shares_cohorts` of the agent it builds on the meta device.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Cohorting:
    """What of a run, beyond its agents, decides whether they train as cohorts (see the
    module docstring). The default trains every agent alone."""

    #: ``training.cohorts``.
    enabled: bool = False
    #: Whether the environment gives every agent of a cohort its own copies (or the
    #: run steps none while it trains).
    copies: bool = False
    #: The class of the replay memory the agents share (None: they share none).
    memory: type | None = None
    #: The memory classes the family's cohort turn has a view of.
    views: frozenset[type] = field(default_factory=frozenset)


def trains_in_cohorts(run: Cohorting) -> bool:
    """Whether agents of ``run`` may share cohorts at all (before their own keys)."""
    shared_memory = run.memory is None or run.memory in run.views
    return run.enabled and run.copies and shared_memory


def cohorts(run: Cohorting, agents: Mapping[int, Any]) -> list[list[int]]:
    """The slots of ``agents`` grouped into cohorts, in slot order (a cohort's first slot
    orders it): by :func:`~agilerl.cohorts.learners.cohort_key` where ``run`` lets them
    share cohorts, every agent alone otherwise."""
    from agilerl.cohorts import learners  # the stacking machinery: imported on first use

    return learners.form_cohorts(dict(agents), trains_in_cohorts(run))


def shares_cohorts(run: Cohorting, agent: Any, count: int) -> bool:
    """Whether ``count`` agents like ``agent`` (one built on the meta device: the
    pre-flight's) would train as cohorts. The values a cohort is keyed by (an actor's
    action bounds) are not read: a meta agent has none, and agents of one run share
    them unless mutation changed their architectures, which the pre-flight cannot know."""
    if count < 2 or not trains_in_cohorts(run):
        return False
    from agilerl.cohorts import learners  # the stacking machinery: imported on first use

    return learners.can_join(agent)
