"""A run's report (agilerl/training/report.py): the three-panel fitness plot (fitness,
training score, the algorithm's main loss) over the steps each family counts. The
progress lines and the best-agent summary: tests/training/test_run_directory.py."""

from __future__ import annotations

import pytest

from agilerl.families import FAMILIES
from agilerl.training.report import fitness_figure


def test_fitness_plot_shows_fitness_training_score_and_the_main_loss():
    agents = lambda gen: [  # noqa: E731
        {"fitness": 10.0 * gen + i, "train_score": None if gen == 0 else 5.0 * gen + i,
         "metrics": {"td_loss": 1.0 / (gen + 1) + i}}
        for i in range(2)
    ]  # fmt: skip
    history = [{"steps": 100 * (g + 1), "agents": agents(g)} for g in range(3)]
    fig = fitness_figure(history, "DQN on CartPole-v1", loss="td_loss")
    fitness_ax, score_ax, loss_ax = fig.axes
    assert "fitness" in fitness_ax.get_ylabel() and "training score" in score_ax.get_ylabel()
    assert "td loss" in loss_ax.get_ylabel()

    def line(ax, label):
        (found,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
        return found.get_xdata().tolist(), found.get_ydata().tolist()

    assert line(fitness_ax, "best agent") == ([100, 200, 300], [1.0, 11.0, 21.0])
    # Generation 0 had no finished training episode: the score panel starts later.
    assert line(score_ax, "population mean") == ([200, 300], [5.5, 10.5])
    assert line(loss_ax, "population mean")[1] == pytest.approx([1.5, 1.0, 1 / 3 + 0.5])
    assert [ln.get_label() for ln in loss_ax.get_lines()] == ["population mean"]  # no "best" loss
    assert loss_ax.get_xlabel() == "environment steps per agent"
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("family", sorted(FAMILIES.values(), key=lambda f: f.title), ids=str)
def test_each_familys_plot_counts_its_own_steps_and_keeps_labels_beside_their_panels(family):
    """The x-axis counts what ``max_steps`` counts for the family (an LLM run's batches,
    not environment steps), and no y-axis label, however long the family's ``measure``,
    reaches into the next panel."""
    import matplotlib.pyplot as plt

    agents = [{"fitness": 0.5, "train_score": 0.4, "metrics": {"loss": 1.0}}]
    history = [{"steps": 10 * (g + 1), "agents": agents} for g in range(2)]
    fig = fitness_figure(history, "t", "loss", family.measure, family.step_unit)
    assert fig.axes[-1].get_xlabel() == f"{family.step_unit} per agent"
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        panel, label = ax.get_window_extent(renderer), ax.yaxis.label.get_window_extent(renderer)
        assert panel.y0 <= label.y0 and label.y1 <= panel.y1, ax.get_ylabel()
    plt.close(fig)


def test_fitness_plot_says_so_when_a_run_has_no_training_scores():
    # An SFT or DPO run: evaluation fitness and a loss, but no rewarded training batches.
    history = [
        {"steps": 10 * (g + 1), "agents": [{"fitness": 0.1 * g, "train_score": None,
                                            "metrics": {"loss": 3.0 - g}}]}
        for g in range(2)
    ]  # fmt: skip
    fig = fitness_figure(history, "SFT on sft", loss="loss")
    fitness_ax, score_ax, loss_ax = fig.axes
    assert not score_ax.get_lines()
    assert [t.get_text() for t in score_ax.texts] == ["no training scores recorded"]
    assert fitness_ax.get_lines() and not fitness_ax.texts and not loss_ax.texts
    import matplotlib.pyplot as plt

    plt.close(fig)
