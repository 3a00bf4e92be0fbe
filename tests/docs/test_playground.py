"""The manifest playground (docs/playground.md) in a real headless Chromium.

The test builds the docs site with the repository's mkdocs.yml (docs/hooks/playground.py
bundles the browser validator), serves it on localhost, and drives Debian's Chromium with
``codegen/node/playground/drive.mjs``: it types a valid and an invalid manifest into the
page key by key, presses Validate and reads the verdict and the located errors back. They
must equal what ``agilerl validate --format json`` reports on the same files.

Without Chromium the test skips, unless ``AGILERL_REQUIRE_BROWSER=1`` (``.ci/run``
installs Chromium and sets it): then it fails.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import ROOT
from support.validate_json import validate_json

REQUIRE_BROWSER_ENV = "AGILERL_REQUIRE_BROWSER"

#: Breaks a type, a bound, a key (one letter off), a required field (a network with an
#: arch needs its head) and a cross-field rule, each on a line of its own.
INVALID = """\
version: 1
algorithm:
  name: PPO
  batch_size: big
  gamma: 1.5
  clip_coeff: 0.2
environment:
  name: CartPole-v1
network:
  arch: mlp
  encoder_config:
    hidden_size: [64]
training:
  max_steps: 1000
  evo_steps: 2048
"""

#: Names an algorithm no schema knows: the panel offers the known names instead.
UNKNOWN_ALGORITHM = """\
algorithm:
  name: PP0
environment:
  name: CartPole-v1
"""


def chromium() -> str:
    """The Chromium executable; skips (or fails, under AGILERL_REQUIRE_BROWSER=1) when it
    or mkdocs (the `docs` extra, which builds the page) is absent."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        problem = "Chromium is not installed (apt-get install chromium)"
    elif importlib.util.find_spec("mkdocs") is None:
        problem = "mkdocs is not installed (the `docs` extra)"
    else:
        return found
    if os.environ.get(REQUIRE_BROWSER_ENV) == "1":
        pytest.fail(f"{problem}, and {REQUIRE_BROWSER_ENV}=1 requires the browser tests to run")
    pytest.skip(f"{problem}; set {REQUIRE_BROWSER_ENV}=1 to make this a failure")


@pytest.fixture(scope="module")
def browser() -> str:
    return chromium()


@pytest.fixture(scope="module")
def site(browser: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs site, built strictly from the repository's mkdocs.yml."""
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", ROOT / "mkdocs.yml", "-d", out],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert result.returncode == 0, f"mkdocs build failed:\n{result.stderr}"
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site on localhost (a thread serving its files); yields the playground's URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/playground/"
    finally:
        server.shutdown()
        server.server_close()


def located(errors: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Errors as (line, column, path, message), in one order (each side sorts its own)."""
    return sorted((e["line"], e["column"], e["path"], e["message"]) for e in errors)


@pytest.mark.node
@pytest.mark.slow
def test_playground_reports_what_agilerl_validate_reports(
    node_toolchain: Any, browser: str, served: str, tmp_path: Path
) -> None:
    valid = ROOT / "configs" / "ppo.yaml"
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text(INVALID, encoding="utf-8")
    unknown = tmp_path / "unknown_algorithm.yaml"
    unknown.write_text(UNKNOWN_ALGORITHM, encoding="utf-8")

    result = node_toolchain.run("playground/drive.mjs", browser, served, valid, invalid, unknown)
    assert result.returncode == 0, f"drive.mjs failed:\n{result.stderr}"
    page = json.loads(result.stdout)
    cli = validate_json(valid, invalid)

    for file in (valid, invalid):
        shown = page[str(file)]
        assert shown["typed"], f"{file}: the editor does not hold the typed text"
        expected = cli[str(file)]
        assert (shown["valid"], located(shown["errors"])) == (
            expected["valid"],
            located(expected.get("errors", [])),
        ), f"{file}: the page and agilerl validate disagree"

    assert page[str(valid)]["valid"] is True
    # Each broken line of INVALID is reported once, where agilerl validate reports it.
    assert [e[:3] for e in located(page[str(invalid)]["errors"])] == [
        (4, 3, "algorithm.batch_size"),
        (5, 3, "algorithm.gamma"),
        (6, 3, "algorithm.clip_coeff"),
        (9, 1, "network.head_config"),
        (15, 3, "training.evo_steps"),
    ]
    assert "did you mean 'clip_coef'?" in " ".join(
        e["message"] for e in page[str(invalid)]["errors"]
    )

    # The algorithm panel: PPO's fields, or the known names when the name is unknown.
    assert page[str(valid)]["algorithm"] == "PPO"
    assert {"clip_coef", "gae_lambda", "update_epochs"} <= set(page[str(valid)]["fields"])
    assert page[str(unknown)]["algorithm"] == ""
    assert "PPO" in page[str(unknown)]["names"] and "DQN" in page[str(unknown)]["names"]


def test_hook_names_the_fix_when_node_modules_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mkdocs")
    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location(
        "playground_hook", ROOT / "docs" / "hooks" / "playground.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    monkeypatch.setattr(hook, "NODE_PROJECT", tmp_path)  # a project never installed
    monkeypatch.setattr(hook.shutil, "which", lambda name: "/usr/bin/node")
    with pytest.raises(PluginError, match=r"run `npm ci --prefix codegen/node`"):
        hook._bundle(tmp_path / "out")
