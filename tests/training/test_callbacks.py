"""The user's callbacks at a generation's end (agilerl/training/callbacks.py): every
callback is called, in order, and the run stops when any returned ``False``."""

from __future__ import annotations

from agilerl.training.callbacks import Callback, stop_requested


class Answers(Callback):
    def __init__(self, answer, calls, name):
        self.answer, self.calls, self.name = answer, calls, name

    def on_generation(self, state):
        self.calls.append((self.name, state))
        return self.answer


def test_the_base_callback_does_nothing_and_never_stops_a_run():
    callback = Callback()
    assert callback.on_evaluation(object(), {"fitness": 1.0}, object()) is None
    assert stop_requested([callback], object()) is False


def test_a_false_answer_stops_the_run_after_every_callback_is_called_in_order():
    calls, state = [], object()
    callbacks = [Answers(None, calls, "a"), Answers(False, calls, "b"), Answers(True, calls, "c")]
    assert stop_requested(callbacks, state) is True
    assert calls == [("a", state), ("b", state), ("c", state)]


def test_only_false_stops_a_run_not_other_falsy_answers():
    calls = []
    callbacks = [Answers(None, calls, "a"), Answers(0, calls, "b"), Answers(True, calls, "c")]
    assert stop_requested(callbacks, object()) is False
    assert stop_requested([], object()) is False
