"""Fixtures of the generation loop's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def formed(monkeypatch):
    """The cohorts every generation of the test's runs formed, in order."""
    import agilerl.cohorts.learners as learners

    groups = []
    real = learners.form_cohorts
    monkeypatch.setattr(
        learners, "form_cohorts", lambda *a, **k: groups.append(real(*a, **k)) or groups[-1]
    )
    return groups
