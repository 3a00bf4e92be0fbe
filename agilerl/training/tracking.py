"""Experiment tracking: every generation's metrics, into TensorBoard and Weights & Biases.

One reporter serves every algorithm family. The generation loop
(:func:`agilerl.training.evolution.evolve`) writes one record per generation into the
run's history (``history.json``); :func:`scalars` and :func:`texts` flatten such a record
into tags once, and each backend only writes what they return. An algorithm takes part by
returning its :attr:`~agilerl.algorithms.core.rl_algorithm.RLAlgorithm.learn_metrics` from ``learn``;
the training loop averages them over the generation with :class:`MeanMetrics`.

Tags (the step is the environment steps per agent, the x-axis of ``fitness.png``):

* ``eval/fitness/agent_<slot>``, ``eval/best_fitness``, ``eval/mean_fitness``
* ``rollout/train_score/agent_<slot>``: mean return of the training episodes that ended
* ``train/<metric>/agent_<slot>``: the algorithm's learn metrics, plus what the training
  loop adds (off-policy: ``epsilon``)
* ``hyperparameters/<name>/agent_<slot>``: the mutable hyperparameters
* ``time/env_steps_per_s/agent_<slot>`` and ``time/env_steps_per_s`` (the generation)
* text ``mutation/agent_<slot>`` and ``hyperparameters/agent_<slot>`` (all of them, JSON)

``<slot>`` is the agent's place in the population (tournament selection gives clones new
indices; the slot keeps one line per place); the texts name the agent's index.

Backends are the rows of :data:`BACKENDS`, keyed by the ``training`` field that turns each
on; their packages are optional extras, checked before a run starts
(:func:`unavailable`, called by the pre-flight).
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agilerl.resources.distribution import install_command
from agilerl.training.callbacks import Callback


class TrackingError(ValueError):
    """A tracking backend that could not start (W&B without a login, say); the message
    names the ``training`` field that asked for it."""


class MeanMetrics:
    """Means of the metric dicts reported during one generation (one per ``learn``
    call); a metric missing from some calls is averaged over those that reported it."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def add(self, metrics: Mapping[str, float]) -> None:
        for name, value in metrics.items():
            self._sums[name] = self._sums.get(name, 0.0) + float(value)
            self._counts[name] = self._counts.get(name, 0) + 1

    def means(self) -> dict[str, float]:
        return {name: total / self._counts[name] for name, total in self._sums.items()}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def scalars(record: Mapping[str, Any]) -> dict[str, float]:
    """The scalar tags of one generation record (module docstring)."""
    agents = record["agents"]
    fitness = [a["fitness"] for a in agents]
    out = {
        "eval/best_fitness": max(fitness),
        "eval/mean_fitness": sum(fitness) / len(fitness),
        "time/env_steps_per_s": record["env_steps_per_s"],
    }
    for slot, agent in enumerate(agents):
        who = f"agent_{slot}"
        out[f"eval/fitness/{who}"] = agent["fitness"]
        if agent["train_score"] is not None:
            out[f"rollout/train_score/{who}"] = agent["train_score"]
        for name, value in agent["metrics"].items():
            out[f"train/{name}/{who}"] = value
        for name, value in agent["mutable"].items():
            out[f"hyperparameters/{name}/{who}"] = value
        out[f"time/env_steps_per_s/{who}"] = agent["env_steps_per_s"]
    return {tag: float(value) for tag, value in out.items() if _finite(value)}


def texts(record: Mapping[str, Any]) -> dict[str, str]:
    """The text tags of one generation record: each agent's mutation and hyperparameters."""
    out = {}
    for slot, agent in enumerate(record["agents"]):
        out[f"mutation/agent_{slot}"] = f"agent {agent['index']}: {agent['mutation']}"
        out[f"hyperparameters/agent_{slot}"] = json.dumps(agent["hyperparameters"], default=str)
    return out


class Tracker(Protocol):
    """A backend: writes a generation's tags at a step, then is closed once."""

    def write(self, step: int, scalars: dict[str, float], texts: dict[str, str]) -> None: ...

    def close(self) -> None: ...


class TensorBoardTracker:
    """Event files in ``log_dir`` (torch's ``SummaryWriter``), flushed every generation
    so ``tensorboard --logdir`` shows a run as it goes; the run's manifest is the text
    ``manifest`` at step 0."""

    def __init__(self, log_dir: str, config: Mapping[str, Any]) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=log_dir)
        # Markdown: indented by four spaces, the document shows as code.
        document = json.dumps(config, indent=2, default=str).replace("\n", "\n    ")
        self.writer.add_text("manifest", "    " + document, 0)

    def write(self, step: int, scalars: dict[str, float], texts: dict[str, str]) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, step)
        for tag, text in texts.items():
            self.writer.add_text(tag, text, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    """A Weights & Biases run in ``project`` (``training.wandb``) whose config is the
    run's manifest; every generation is one ``log`` call at its step."""

    def __init__(self, settings: Any, config: Mapping[str, Any]) -> None:
        import wandb

        self.run = wandb.init(
            project=settings.project,
            entity=settings.entity,
            mode=settings.mode,  # None: WANDB_MODE, else W&B's default (online)
            config=dict(config),
        )

    def write(self, step: int, scalars: dict[str, float], texts: dict[str, str]) -> None:
        self.run.log({**scalars, **texts}, step=step)

    def close(self) -> None:
        self.run.finish()


@dataclass(frozen=True)
class Backend:
    """A tracking backend: the ``training`` field that turns it on (its value is passed
    to ``open`` with the run's manifest document), and the package it needs."""

    field: str
    package: str
    extra: str
    name: str
    open: Callable[[Any, Mapping[str, Any]], Tracker]


BACKENDS = (
    Backend("tensorboard_log_dir", "tensorboard", "tensorboard", "TensorBoard", TensorBoardTracker),
    Backend("wandb", "wandb", "wandb", "Weights & Biases", WandbTracker),
)


def configured(training: Any) -> list[Backend]:
    """The backends ``training`` (a :class:`~agilerl.models.training.TrainingSpec`) asks for."""
    return [b for b in BACKENDS if getattr(training, b.field, None) is not None]


def unavailable(training: Any) -> list[str]:
    """One message per backend ``training`` asks for whose package is not installed."""
    return [
        f"training.{b.field}: {b.name} logging needs the {b.package} package, which is not "
        f"installed: {install_command(b.extra)}"
        for b in configured(training)
        if importlib.util.find_spec(b.package) is None
    ]


class Reporter(Callback):
    """Writes each new generation of a run to every configured backend: a
    :class:`~agilerl.training.callbacks.Callback` of the run; :meth:`close` it after."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers

    @classmethod
    def open(cls, training: Any, config: Mapping[str, Any]) -> Reporter:
        trackers: list[Tracker] = []
        for backend in configured(training):
            try:
                trackers.append(backend.open(getattr(training, backend.field), config))
            except BaseException as err:
                for tracker in trackers:
                    tracker.close()
                if not isinstance(err, Exception):  # an interrupt stays one
                    raise
                raise TrackingError(
                    f"training.{backend.field}: {backend.name} logging could not start: "
                    f"{type(err).__name__}: {err}"
                ) from err
        return cls(trackers)

    def on_generation(self, state: Any) -> None:
        record = state.history[-1]
        found, words = scalars(record), texts(record)
        for tracker in self.trackers:
            tracker.write(record["steps"], found, words)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()
