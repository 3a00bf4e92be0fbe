"""The work a run asks for (agilerl/training/work.py): a product of counts, each beside
its schema default, refused above the ceiling naming the count most likely mistyped,
and a ceiling the environment can raise."""

from __future__ import annotations

import pytest

from agilerl.models.training import TrainingSpec
from agilerl.training.preflight import PreflightError
from agilerl.training.work import (
    ENV_VAR,
    WORK_CEILING,
    Factor,
    Work,
    ceiling,
    check_work,
    factor,
    field_default,
)


@pytest.fixture(autouse=True)
def _no_ceiling_set(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)


def test_an_amount_is_the_product_of_its_counts():
    work = Work("training", (Factor("a", 3), Factor("b", 5, 5), Factor("c", 7)))
    assert work.amount == 105


def test_a_counts_excess_is_its_value_over_its_default():
    assert Factor("training.eval_loop", 50, default=1).excess == 50
    assert Factor("algorithm.update_epochs", 40, default=4).excess == 10
    assert Factor("x", 3, default=0).excess == 3  # a default of 0 counts as 1


def test_the_ceiling_is_ten_billion_steps_unless_the_environment_says():
    assert ceiling() == WORK_CEILING == 10**10


def test_the_environment_raises_the_ceiling(monkeypatch):
    monkeypatch.setenv(ENV_VAR, " 123 ")
    assert ceiling() == 123


@pytest.mark.parametrize("text", ["0", "-5", "1e12", "many"])
def test_a_ceiling_that_is_not_a_positive_count_is_refused(monkeypatch, text):
    monkeypatch.setenv(ENV_VAR, text)
    with pytest.raises(PreflightError) as err:
        ceiling()
    assert str(err.value) == f"{ENV_VAR}={text!r}: expected a positive number of steps"


def test_work_up_to_the_ceiling_passes(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "100")
    check_work(
        [Work("training", (Factor("a", 10), Factor("b", 5))), Work("eval", (Factor("c", 50),))]
    )


def test_work_over_it_names_the_count_furthest_above_its_default_in_the_largest_part(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "1000")
    training = Work(
        "training",
        (Factor("training.max_steps", 100, 100), Factor("algorithm.update_epochs", 40, 4)),
    )
    evaluation = Work("evaluation", (Factor("training.eval_loop", 90, 1),))
    with pytest.raises(PreflightError) as err:
        check_work([training, evaluation])
    assert str(err.value) == (
        "algorithm.update_epochs: 40 makes training 4,000 steps "
        "(training.max_steps 100 x algorithm.update_epochs 40); the run asks for 4,090 "
        f"steps of work in all, more than the 1,000 a run may ({ENV_VAR} raises it)"
    )


def test_a_factor_reads_a_specs_value_beside_its_schema_default():
    spec = TrainingSpec(pop_size=6)
    assert factor("training", spec, "pop_size") == Factor("training.pop_size", 6, 1)
    assert field_default(spec, "max_steps") == 1_000_000


def test_a_field_without_an_integer_default_counts_its_default_as_1():
    spec = TrainingSpec()
    assert field_default(spec, "target_score") == 1  # None by default
    assert field_default(spec, "no_such_field") == 1
