"""The HPO operators' settings are checked against what the operators do with them
(agilerl.hpo.limits) when an evolving run is put together: a ``mutation_sd`` that turns
weights into noise (1e300 overflows float32) and a tournament larger than the population
are refused with the dotted path and why."""

from __future__ import annotations

import json

import pytest

from agilerl.cli import main
from agilerl.hpo.limits import MAX_MUTATION_SD
from agilerl.trainer import LocalTrainer, TrainerError

SD_MESSAGE = (
    "mutation.mutation_sd: 1e+300 is above 10: a parameter mutation adds noise of standard "
    "deviation mutation_sd x |weight|, so this replaces weights by noise (and overflows "
    "float32 into inf and NaN) instead of perturbing them"
)
TOURNAMENT_MESSAGE = (
    "selection_strategy.tournament_size: 1,000 is more than training.pop_size (2): "
    "tournaments draw their entrants from the population with replacement, so the next "
    "generation would be clones of the fittest agent alone; use at most pop_size"
)


def trainer(mutation_sd=0.1, tournament_size=2, pop_size=2, hpo=True):
    return LocalTrainer(
        "DQN",
        "CartPole-v1",
        {"pop_size": pop_size, "hpo": hpo},
        mutation={"mutation_sd": mutation_sd},
        selection_strategy={"tournament_size": tournament_size},
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"mutation_sd": 1e300}, SD_MESSAGE),
        ({"tournament_size": 1000}, TOURNAMENT_MESSAGE),
        ({"mutation_sd": 1e300, "tournament_size": 1000}, f"{SD_MESSAGE}; {TOURNAMENT_MESSAGE}"),
    ],
)
def test_unusable_operator_settings_are_refused_with_the_field_and_why(settings, message):
    with pytest.raises(TrainerError) as err:
        trainer(**settings)
    assert str(err.value) == message


def test_the_limits_edges_and_runs_that_do_not_evolve_are_accepted():
    trainer(mutation_sd=MAX_MUTATION_SD, tournament_size=2, pop_size=2)
    trainer(tournament_size=5, pop_size=1)  # one agent: nothing to select from
    trainer(mutation_sd=1e300, tournament_size=1000, hpo=False)  # the operators never run


def test_agilerl_train_refuses_them_as_one_line(tmp_path, capsys):
    document = {
        "algorithm": {"name": "DQN"},
        "environment": {"name": "CartPole-v1"},
        "training": {"pop_size": 2},
        "mutation": {"mutation_sd": 1e300},
        "selection_strategy": {"tournament_size": 1000},
    }
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps(document))
    assert main(["train", str(manifest), "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == f"agilerl: {SD_MESSAGE}; {TOURNAMENT_MESSAGE}"
    assert not (tmp_path / "run").exists()
