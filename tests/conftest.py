"""Shared pytest fixtures."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT

# Nothing a test runs may download. The Hugging Face libraries read these when imported
# (after this module: pytest imports conftest first), agilerl.llm.hub when it resolves a
# name; subprocesses inherit them.
for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_variable] = "1"


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Every test runs torch on one intra-op thread: the tiny networks of the tests gain
    nothing from more, idle threads spinning on a busy 2-core machine make each backward
    pass many times slower, and a learning test's outcome must not depend on how many
    cores the machine has (the thread count changes float reduction order)."""
    import sys

    torch = sys.modules.get("torch")  # spec-only sessions never import torch
    if torch is None:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- Node toolchain (tests marked `node`) --------------------------------------------

NODE_PROJECT = ROOT / "codegen" / "node"
#: Set to 1 (CI does) to make missing Node tooling a failure instead of a skip.
REQUIRE_NODE_ENV = "AGILERL_REQUIRE_NODE"


@dataclass(frozen=True)
class NodeToolchain:
    """The ``node`` executable and the npm project in ``codegen/node``."""

    node: str
    project: Path

    def run(self, script: str, *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
        """Run ``codegen/node/<script>`` from the repository root; never raises on exit status."""
        return subprocess.run(
            [self.node, str(self.project / script), *map(str, args)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


@pytest.fixture(scope="session")
def node_toolchain() -> NodeToolchain:
    """Node and the installed npm packages of ``codegen/node``.

    Skips the requesting test when either is missing, unless ``AGILERL_REQUIRE_NODE=1``,
    in which case it fails: CI must never go green by skipping the ajv checks.
    """
    node = shutil.which("node")
    if node is None:
        problem = "node is not on PATH"
    elif not (NODE_PROJECT / "node_modules").is_dir():
        problem = "codegen/node/node_modules is missing (run `npm ci` in codegen/node)"
    else:
        return NodeToolchain(node=node, project=NODE_PROJECT)
    if os.environ.get(REQUIRE_NODE_ENV) == "1":
        pytest.fail(f"{problem}, and {REQUIRE_NODE_ENV}=1 requires the Node tests to run")
    pytest.skip(f"{problem}; set {REQUIRE_NODE_ENV}=1 to make this a failure")


# --- LLM tiny assets -----------------------------------------------------------------
@dataclass(frozen=True)
class HubCaches:
    """Empty Hugging Face caches of one test: models (``HF_HUB_CACHE``) and prepared
    datasets (``HF_DATASETS_CACHE``)."""

    hub: Path
    datasets: Path


@pytest.fixture
def hf_caches(tmp_path, monkeypatch) -> HubCaches:
    """Empty caches in ``tmp_path``, named by the variables, so no test reads the
    machine's own caches (write into them with ``support.hub_caches``)."""
    caches = HubCaches(hub=tmp_path / "hf-hub", datasets=tmp_path / "hf-datasets")
    for path in (caches.hub, caches.datasets):
        path.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(caches.hub))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(caches.datasets))
    return caches


@pytest.fixture(scope="session")
def tiny_llm(tmp_path_factory) -> Path:
    """The tiny LLM assets (``agilerl.llm.tiny``: model/, data/*.jsonl, reward.py), built
    once per session (seed 0). Tests must not modify them; copy what you change."""
    from agilerl.llm.tiny import build_tiny_assets

    return build_tiny_assets(tmp_path_factory.mktemp("tiny_llm"), seed=0)
