"""What a run shows its user: the progress bar, per-generation summaries, the plot."""

from __future__ import annotations

import io
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agilerl.files.atomic import write_bytes


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


class Progress:
    """A tqdm bar over the run's budget (``max_steps`` per agent, times the population),
    showing one rate, env steps/s (every env step: training and evaluation, all agents),
    and ``best``, the best fitness ever evaluated in the run; silent when not verbose.

    An agent's rollouts may overshoot its share of the budget (PPO collects whole
    rollouts): the bar counts the budget used, never more, and :meth:`close` with
    ``done`` fills it, so a run that used its budget ends at 100%.
    """

    #: tqdm's default bar without its own rate (ours, env steps/s, is in the postfix).
    FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"

    def __init__(self, total: int, initial: int, verbose: bool, desc: str) -> None:
        self.verbose = verbose
        self.bar = (
            tqdm(
                total=total,
                initial=initial,
                desc=desc,
                unit="step",
                unit_scale=True,
                dynamic_ncols=True,
                file=sys.stderr,
                mininterval=0.5,
                bar_format=self.FORMAT,
            )
            if verbose
            else None
        )

    def update(
        self, steps: int, env_steps_per_s: float, best: float | None, generation: int
    ) -> None:
        if self.bar is None:
            return
        self.bar.update(min(steps, self.bar.total - self.bar.n))
        postfix = {"gen": generation, "env steps/s": f"{env_steps_per_s:,.0f}"}
        if best is not None:
            postfix["best"] = score(best)
        self.bar.set_postfix(postfix, refresh=False)

    def write(self, text: str) -> None:
        if not self.verbose:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def close(self, done: bool = False) -> None:
        if self.bar is None:
            return
        if done:
            self.bar.update(self.bar.total - self.bar.n)
        self.bar.close()


def score(value: float) -> str:
    """A fitness or score as the summaries show it: one decimal (a return of 213.5), three
    where it lies below one in size (an LLM's mean reward or accuracy, 0.438)."""
    return f"{value:.1f}" if abs(value) >= 1 or value == 0 else f"{value:.3f}"


def describe_best(best: dict[str, Any] | None) -> str:
    """The best agent ever evaluated in a run (``RunState.best``), as the generation
    summaries, the closing line and the trainer's output listing all name it."""
    if best is None:
        return "no agent evaluated yet"
    return f"best ever {score(best['fitness'])} (agent {best['index']}, generation {best['generation']})"


def generation_summary(
    record: dict[str, Any],
    max_steps: int,
    best_ever: dict[str, Any] | None = None,
    metrics: tuple[str, ...] = (),
    score_column: str | None = "train score",
) -> str:
    """A short table: fitness and training score (headed ``score_column``; None: no
    training score column) per agent,
    the generation's means of its learn ``metrics`` (an LLM run shows loss and KL), its
    mutable hyperparameters, the mutation it received before this generation's training. The head names this generation's best
    and, given ``best_ever`` (``RunState.best``), the best agent of the whole run."""
    agents = record["agents"]
    hp_names = sorted({name for agent in agents for name in agent["mutable"]})
    metrics = tuple(m for m in metrics if any(m in agent["metrics"] for agent in agents))
    best = max(agents, key=lambda a: a["fitness"])
    ever = f"  {describe_best(best_ever)}" if best_ever is not None else ""
    head = (
        f"generation {record['generation']}  steps {record['steps']:,}/{max_steps:,} per agent  "
        f"best of generation {score(best['fitness'])} (agent {best['index']}){ever}  "
        f"{record['env_steps_per_s']:,.0f} env steps/s"
    )
    scored = [score_column] if score_column is not None else []
    columns = ["agent", "fitness", *scored, *metrics, *hp_names, "mutation"]
    rows = [
        [
            str(a["index"]),
            score(a["fitness"]),
            *("-" if a["train_score"] is None else score(a["train_score"]) for _ in scored),
            *(_fmt(a["metrics"].get(m, "-")) for m in metrics),
            *(_fmt(a["mutable"].get(n, "-")) for n in hp_names),
            a["mutation"],
        ]
        for a in agents
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [head, "  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def _panel(
    ax: Any,
    steps: list[int],
    values: list[list[float]],
    ylabel: str,
    empty: str,
    best: bool = True,
) -> None:
    """Every agent's value per generation (dots) with the population mean and, where the
    highest value is the best one (``best``), the best agent's (lines); generations
    without a value are skipped, and a panel with none says ``empty`` instead of
    showing bare axes."""
    drawn = [(x, v) for x, v in zip(steps, values, strict=True) if v]
    for x, v in drawn:
        ax.scatter([x] * len(v), v, s=12, color="tab:blue", alpha=0.4)
    if drawn:
        xs = [x for x, _ in drawn]
        if best:
            ax.plot(xs, [max(v) for _, v in drawn], color="tab:green", label="best agent")
        mean = [sum(v) / len(v) for _, v in drawn]
        ax.plot(xs, mean, color="tab:orange", label="population mean")
        ax.legend(loc="best", fontsize="small")
    else:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_ylabel(_fitting(ylabel))
    ax.grid(alpha=0.3)


#: Characters of a y-axis label line that fit beside one panel of :func:`fitness_figure`
#: (2.3 inches tall, labels at 10 pt): a longer line runs into the panel below.
LABEL_WIDTH = 30


def _fitting(label: str) -> str:
    """``label`` with each line wrapped to :data:`LABEL_WIDTH` (a family's ``measure``,
    the LLM's "score: reward, accuracy or 1/perplexity", is longer)."""
    return "\n".join(textwrap.fill(line, LABEL_WIDTH) for line in label.split("\n"))


def plot_fitness(
    history: list[dict[str, Any]],
    path: str | Path,
    title: str,
    loss: str | None = None,
    measure: str = "mean return",
    step_unit: str = "environment steps",
) -> Path:
    """PNG of :func:`fitness_figure`, written atomically (:func:`agilerl.files.atomic.write_bytes`)."""
    import matplotlib.pyplot as plt

    fig = fitness_figure(history, title, loss, measure, step_unit)
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return write_bytes(path, png.getvalue())


def fitness_figure(
    history: list[dict[str, Any]],
    title: str,
    loss: str | None = None,
    measure: str = "mean return",
    step_unit: str = "environment steps",
) -> Any:
    """A run's generations in three panels sharing the x-axis (``step_unit`` per agent,
    the family's: environment steps, an LLM run's batches): every agent's evaluation
    fitness, its training score (mean return of the training episodes that ended) and
    its ``loss`` (the algorithm's ``main_loss`` metric, averaged over the generation),
    with the population mean (and, for fitness and score, the best agent's).
    ``measure``: what fitness and score are (an LLM run's are test-split scores and
    training rewards)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    steps = [r["steps"] for r in history]

    def per_agent(value: Callable[[dict[str, Any]], Any]) -> list[list[float]]:
        found = [[value(a) for a in r["agents"]] for r in history]
        return [[float(v) for v in gen if v is not None] for gen in found]

    fig, axes = plt.subplots(3, 1, figsize=(7, 8.5), dpi=100, sharex=True)
    fitness = per_agent(lambda a: a["fitness"])
    _panel(axes[0], steps, fitness, f"evaluation fitness\n({measure})", "no evaluation yet")
    scores = per_agent(lambda a: a["train_score"])
    # SFT and DPO batches carry no reward, so their runs have no training score.
    _panel(axes[1], steps, scores, f"training score\n({measure})", "no training scores recorded")
    losses = per_agent(lambda a: a["metrics"].get(loss)) if loss else []
    label = f"{(loss or 'loss').replace('_', ' ')}\n(mean per generation)"
    _panel(
        axes[2], steps if loss else [], losses, label, "no learning updates recorded", best=False
    )
    axes[0].set_title(title)
    axes[-1].set_xlabel(f"{step_unit} per agent")
    fig.tight_layout()
    return fig
