"""`mkdocs build --strict` of this checkout succeeds: no warning, no broken link."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import ROOT

pytest.importorskip(
    "mkdocs", reason="mkdocs is not installed: the docs extra (pip install -e '.[docs]')"
)
pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: the docs extra")


@pytest.mark.slow
def test_the_site_builds_in_strict_mode(tmp_path):
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (site / "reference" / "specs" / "manifest" / "index.html").exists()
    assert (site / "reference" / "cli" / "index.html").exists()
    assert (site / "reference" / "api" / "agilerl.trainer" / "index.html").exists()
    # the x-agilerl-rules vocabulary's page, and its meta-schema where its $id says
    assert (site / "reference" / "rules-vocabulary" / "index.html").exists()
    meta = json.loads((ROOT / "codegen" / "rules.schema.json").read_text(encoding="utf-8"))
    assert meta["$id"] == "https://agilerl.dev/schemas/meta/x-agilerl-rules.schema.json"
    published = site / "schemas" / "meta" / "x-agilerl-rules.schema.json"
    assert json.loads(published.read_text(encoding="utf-8")) == meta
