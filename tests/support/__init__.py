"""Helpers the tests share (``tests`` is on pytest's ``pythonpath``): where the repository
and the test data are, and the process launchers of the multi-process tests."""

from pathlib import Path

#: The repository root (tests sit at any depth under ``tests/``, mirroring the package).
ROOT = Path(__file__).resolve().parents[2]
#: ``tests/``: the corpora (``agilerl_manifests``, ``corpus``, ``manifest_corpus``) and ``data/``.
TESTS = ROOT / "tests"
#: What running the tutorials makes beside their files in ``examples/`` (ignored by git):
#: tests that copy ``examples/`` leave these out, so they start from what a clone holds.
MADE_BY_TUTORIALS = ("tiny-llm", "cartpole.h5", "__pycache__")
