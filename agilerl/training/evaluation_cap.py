"""How long an evaluation episode runs when ``training.eval_steps`` leaves it to the
environment: to its end, or :data:`EVAL_EPISODE_CAP` steps, whichever comes first.

An environment whose episodes never end (one given in Python or by an entry point, with
no time limit) used to keep a run in its first evaluation for ever, with no message. The
cap is far above any episode of the environments the project ships (the longest, an
Atari game, ends at 108,000 frames: 27,000 agent steps of 4 frames), so it cuts none of
theirs. Where it cuts one, the cut episodes' returns so far are their score, the run goes
on, and it warns once (:class:`EvaluationCutWarning`) that ``training.eval_steps`` sets
the length: any value, below the cap or above it, replaces the cap. A saved agent's
evaluation (``agilerl evaluate``, ``evaluate_agent``) is bounded by the same cap, which
``max_episode_steps`` replaces.
"""

from __future__ import annotations

import warnings

from agilerl.guards.user_code import UserCodeWarning
from agilerl.training.state import RunState

#: Steps an evaluation episode runs at most when ``training.eval_steps`` is unset.
EVAL_EPISODE_CAP = 100_000


class EvaluationCutWarning(UserCodeWarning):
    """The cap cut an evaluation episode: the environment's episodes did not end by
    themselves (given once a run)."""


def episode_steps(eval_steps: int | None) -> int:
    """The steps an evaluation episode may run: ``eval_steps`` where the run sets it,
    else :data:`EVAL_EPISODE_CAP`."""
    return EVAL_EPISODE_CAP if eval_steps is None else eval_steps


def _warn_cut(setting: str, hint: str = "") -> None:
    """The cap cut an evaluation episode short: say so, naming the ``setting`` that sets
    the length (``hint``: where else it is spelled), at the evaluation's caller."""
    name = setting.rpartition(".")[2]
    warnings.warn(
        f"{setting}: an evaluation episode ran {EVAL_EPISODE_CAP:,} steps without "
        f"ending and was cut there, its return so far taken as its score ({name} is "
        "unset, and this environment's episodes do not end by themselves); set "
        f"{setting}{hint} to the steps an evaluation episode should run",
        EvaluationCutWarning,
        stacklevel=3,
    )


def warn_if_cut(cut: bool, eval_steps: int | None, state: RunState) -> None:
    """Warn, once in the run of ``state``, that the cap cut an evaluation episode short
    (``cut``). An ``eval_steps`` the run sets cuts episodes as asked, without a word."""
    if not cut or eval_steps is not None or EvaluationCutWarning in state.warned:
        return
    state.warned.add(EvaluationCutWarning)
    _warn_cut("training.eval_steps")


def warn_if_saved_cut(cut: bool, max_episode_steps: int | None) -> None:
    """The same, once for an evaluation of a saved agent (``agilerl evaluate``,
    ``evaluate_agent``), whose episodes ``max_episode_steps`` cuts where given."""
    if cut and max_episode_steps is None:
        _warn_cut("max_episode_steps", " (agilerl evaluate --max-episode-steps)")
