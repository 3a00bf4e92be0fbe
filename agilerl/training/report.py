"""What a run shows its user: the progress bar, per-generation summaries, the plot."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agilerl.atomic import write_bytes


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


class Progress:
    """A tqdm bar over the population's training steps, with steps/s (training and
    evaluation steps counted) and the best fitness so far; silent when not verbose."""

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
            )
            if verbose
            else None
        )

    def update(
        self, steps: int, env_steps_per_s: float, best: float | None, generation: int
    ) -> None:
        if self.bar is None:
            return
        self.bar.update(steps)
        postfix = {"gen": generation, "env steps/s": f"{env_steps_per_s:,.0f}"}
        if best is not None:
            postfix["best"] = f"{best:.1f}"
        self.bar.set_postfix(postfix, refresh=False)

    def write(self, text: str) -> None:
        if not self.verbose:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            print(text, file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def generation_summary(record: dict[str, Any], max_steps: int) -> str:
    """A short table: fitness per agent, its mutable hyperparameters, the mutation it
    received before this generation's training."""
    agents = record["agents"]
    hp_names = sorted({name for agent in agents for name in agent["mutable"]})
    best = max(agents, key=lambda a: a["fitness"])
    head = (
        f"generation {record['generation']}  steps {record['steps']:,}/{max_steps:,} per agent  "
        f"best {best['fitness']:.1f} (agent {best['index']})  {record['env_steps_per_s']:,.0f} env steps/s"
    )
    columns = ["agent", "fitness", "train score", *hp_names, "mutation"]
    rows = [
        [
            str(a["index"]),
            f"{a['fitness']:.1f}",
            "-" if a["train_score"] is None else f"{a['train_score']:.1f}",
            *(_fmt(a["mutable"].get(n, "-")) for n in hp_names),
            a["mutation"],
        ]
        for a in agents
    ]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [head, "  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def plot_fitness(history: list[dict[str, Any]], path: str | Path, title: str) -> Path:
    """PNG of every agent's evaluation fitness per generation, with the best and mean,
    written atomically (:func:`agilerl.atomic.write_bytes`)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    steps = [r["steps"] for r in history]
    fitness = [[a["fitness"] for a in r["agents"]] for r in history]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for x, values in zip(steps, fitness, strict=True):
        ax.scatter([x] * len(values), values, s=12, color="tab:blue", alpha=0.4)
    ax.plot(steps, [max(v) for v in fitness], color="tab:green", label="best agent")
    ax.plot(steps, [sum(v) / len(v) for v in fitness], color="tab:orange", label="population mean")
    ax.set_xlabel("environment steps per agent")
    ax.set_ylabel("evaluation fitness (mean return)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return write_bytes(path, png.getvalue())
