"""The work a run asks for, bounded before the first step.

A count that multiplies a run's work (``algorithm.update_epochs``, ``training.eval_loop``,
a GRPO ``group_size``, the population) is valid at any size in the schema, and a value
of 10**9 made a run that validated, passed the memory pre-flight and then never ended.
Each family states what its run does as :class:`Work`: an amount of steps that is the
product of the counts (:class:`Factor`) deciding it. A run whose total exceeds
:func:`ceiling` is refused, naming the count furthest above its default (the one most
likely mistyped) with every factor's value.

A *step* is one environment step or one sample passed through the networks (RL), or one
token of one sequence through the model (LLM). :data:`WORK_CEILING` is 10**10 of them:
the CPU runs of this engine measure 1,600-12,500 environment steps a second
(docs/benchmarks.md), so 10**10 steps are 9 to 70 days of one machine; a run asking for more
is a typo, not a plan. :data:`ENV_VAR` raises the ceiling for a machine that is faster.

An evaluation episode counts as the most it can run (:func:`evaluation_episode`):
``training.eval_steps`` where set; else the time limit Gymnasium registers for the
environment, where nothing but Gymnasium's registration decides when its episodes end;
else the evaluation cap (:mod:`agilerl.training.evaluation_cap`), which is where an
episode that never ends is cut.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agilerl.training.evaluation_cap import EVAL_EPISODE_CAP
from agilerl.training.preflight import PreflightError

#: Steps of work (see the module) above which a run is refused.
WORK_CEILING = 10**10
#: Environment variable that replaces :data:`WORK_CEILING` (a positive integer).
ENV_VAR = "AGILERL_MAX_WORK"


@dataclass(frozen=True)
class Factor:
    """One count a run's work is multiplied by: its dotted path, value and default."""

    path: str
    value: int
    default: int = 1

    @property
    def excess(self) -> float:
        """How far above its default the value is (what makes it the likely culprit)."""
        return self.value / max(1, self.default)


@dataclass(frozen=True)
class Work:
    """Part of a run's work: what it is and the counts whose product it is."""

    what: str
    factors: tuple[Factor, ...]

    @property
    def amount(self) -> int:
        return math.prod(factor.value for factor in self.factors)


def ceiling() -> int:
    """:data:`ENV_VAR` where set, else :data:`WORK_CEILING`; a bad value is refused."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return WORK_CEILING
    if not text.isdigit() or int(text) < 1:
        raise PreflightError(f"{ENV_VAR}={text!r}: expected a positive number of steps")
    return int(text)


def check_work(works: list[Work]) -> None:
    """Refuse a run whose work (the sum of ``works``) is above :func:`ceiling`, naming
    the count furthest above its default in the largest part."""
    limit = ceiling()
    total = sum(work.amount for work in works)
    if total <= limit:
        return
    largest = max(works, key=lambda work: work.amount)
    culprit = max(largest.factors, key=lambda factor: factor.excess)
    product = " x ".join(f"{factor.path} {factor.value:,}" for factor in largest.factors)
    raise PreflightError(
        f"{culprit.path}: {culprit.value:,} makes {largest.what} {largest.amount:,} steps "
        f"({product}); the run asks for {total:,} steps of work in all, more than the "
        f"{limit:,} a run may ({ENV_VAR} raises it)"
    )


def field_default(spec: Any, name: str) -> int:
    """The default of an integer field of a spec (1 where it has none)."""
    info = type(spec).model_fields.get(name)
    default = None if info is None else info.default
    return default if isinstance(default, int) and not isinstance(default, bool) else 1


def factor(section: str, spec: Any, name: str) -> Factor:
    """``section.name`` of ``spec`` as a :class:`Factor` (its schema default beside it)."""
    return Factor(f"{section}.{name}", int(getattr(spec, name)), field_default(spec, name))


def registered_limit(ctx: Any) -> int | None:
    """The time limit on an episode of the run's environment that Gymnasium's
    registration sets (``environment.config.max_episode_steps`` replaces it, as
    ``gymnasium.make`` takes it), where nothing else decides when an episode ends: a
    registered id without an entry point, wrappers or an environment given in Python,
    whose code may end episodes later or never. None where there is none."""
    env = ctx.environment
    if (
        ctx.env_source is not None
        or getattr(env, "entrypoint", None)
        or getattr(env, "wrappers", None)
    ):
        return None
    registered = gym.registry.get(str(getattr(env, "name", "")))  # no import: user code
    if registered is None:
        return None
    limit = (getattr(env, "config", None) or {}).get(
        "max_episode_steps", registered.max_episode_steps
    )
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None


def evaluation_episode(ctx: Any) -> Factor:
    """The steps an evaluation episode is counted as: ``training.eval_steps`` where set,
    else the most it can run, its registered time limit (:func:`registered_limit`) or
    the evaluation cap, whichever is lower (named after ``training.eval_steps``, which
    bounds it)."""
    training = ctx.training
    if training.eval_steps:
        return factor("training", training, "eval_steps")
    limit = registered_limit(ctx)
    if limit is not None and limit < EVAL_EPISODE_CAP:
        return Factor(f"training.eval_steps (unset: {ctx.environment.name}'s time limit)", limit)
    return Factor("training.eval_steps (unset: the evaluation cap)", EVAL_EPISODE_CAP)


def rl_work(ctx: Any, episode: Factor | None = None) -> list[Work]:
    """The work of an RL run (single-agent, multi-agent, offline, bandit): environment
    steps, the samples its updates pass through the networks, and its evaluations, each
    episode counted as ``episode`` (default :func:`evaluation_episode`: a family whose
    evaluation is not episodes that end passes its own)."""
    algorithm, training = ctx.algorithm, ctx.training
    pop, steps = factor("training", training, "pop_size"), factor("training", training, "max_steps")
    works = [Work("training", (pop, steps))]
    if getattr(algorithm, "update_epochs", None):  # on-policy: every sample, each epoch
        works.append(
            Work("the updates", (pop, steps, factor("algorithm", algorithm, "update_epochs")))
        )
    elif getattr(algorithm, "learn_step", None):  # a batch every learn_step steps
        count = -(-steps.value // algorithm.learn_step)
        learns = Factor("learning steps", count, count)
        works.append(
            Work("the updates", (pop, learns, factor("algorithm", algorithm, "batch_size")))
        )
    evo_steps = training.evo_steps or algorithm.default_evo_steps
    count = -(-steps.value // evo_steps)
    generations = Factor("generations", count, count)  # derived: never the one named
    envs = Factor("environment.num_envs", int(getattr(ctx.environment, "num_envs", 1) or 1))
    episode = episode or evaluation_episode(ctx)
    rounds = factor("training", training, "eval_loop")
    works.append(Work("the evaluations", (pop, generations, rounds, envs, episode)))
    return works
