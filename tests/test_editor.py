"""An editor completes and checks training manifests from schemas/.

A real yaml-language-server (the engine of the VS Code YAML extension and of most
other editors' YAML support; installed from ``codegen/node/package-lock.json``) is
driven over LSP the way an editor drives it. Each manifest names its schema with the
modeline that README-style manifests use:

    # yaml-language-server: $schema=<file URI of schemas/manifest.schema.json>

How the schemas stay offline: every schema has an ``https://agilerl.dev/...`` ``$id``,
so a relative ``$ref`` such as ``dqn.schema.json#/$defs/DQNFields`` resolves, per JSON
Schema, to ``https://agilerl.dev/schemas/dqn.schema.json``. yaml-language-server (since
1.21) first looks for a file of that name next to the ``file://`` schema that holds the
``$ref`` and only fetches the URL when there is none; all our schemas are siblings, so
nothing is fetched. To keep it that way, the settings below send any HTTP(S) request to
a closed local port: a fetch fails at once with a "Problems loading reference"
diagnostic, which the valid-manifest test reports, instead of going to the network or
hanging on it. The SchemaStore catalog (fetched from the web by default) is off.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REQUIRE_NODE_ENV, NodeToolchain
from lsp_client import LspClient

from agilerl.models.manifest import parse_manifest

pytestmark = pytest.mark.node

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST_SCHEMA = REPO_ROOT / "schemas" / "manifest.schema.json"
#: The package's `bin` entry (package.json of yaml-language-server).
SERVER_BIN = Path("node_modules", "yaml-language-server", "bin", "yaml-language-server")

MODELINE = f"# yaml-language-server: $schema={MANIFEST_SCHEMA.as_uri()}\n"
SETTINGS = {
    "yaml": {
        "validate": True,
        "completion": True,
        "hover": True,
        "schemaStore": {"enable": False},  # the catalog is fetched from the web
    },
    # Any remote schema fetch fails immediately and visibly (see the module docstring).
    "http": {"proxy": "http://127.0.0.1:9", "proxyStrictSSL": True},
}
#: Seconds to wait for any one answer; loading the schemas takes about a second.
TIMEOUT = 15.0
ERROR = 1  # DiagnosticSeverity.Error


class Editor:
    """Opens manifests in the running server, each as a new file of the workspace."""

    def __init__(self, client: LspClient, workspace: Path) -> None:
        self.client = client
        self.workspace = workspace
        self._names = (f"manifest_{n}.yaml" for n in itertools.count())

    def open(self, text: str) -> str:
        path = self.workspace / next(self._names)
        path.write_text(text)  # what an editor would have on disk; the server reads `text`
        return self.client.open_document(path, text)

    def complete_at(self, text: str, marker: str) -> list[str]:
        """Completion labels with the cursor at the end of the line ``marker`` (exact)."""
        line = text.splitlines().index(marker)
        uri = self.open(text)
        return [item["label"] for item in self.client.complete(uri, line, len(marker))]

    def diagnostics(self, text: str) -> list[dict[str, Any]]:
        return self.client.wait_for_diagnostics(self.open(text))


@pytest.fixture(scope="module")
def editor(node_toolchain: NodeToolchain, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Editor]:
    """One yaml-language-server for the module, initialised like an editor does."""
    server = node_toolchain.project / SERVER_BIN
    if not server.is_file():
        problem = f"{server.relative_to(REPO_ROOT)} is missing (run `npm ci` in codegen/node)"
        if os.environ.get(REQUIRE_NODE_ENV) == "1":
            pytest.fail(f"{problem}, and {REQUIRE_NODE_ENV}=1 requires the Node tests to run")
        pytest.skip(f"{problem}; set {REQUIRE_NODE_ENV}=1 to make this a failure")

    workspace = tmp_path_factory.mktemp("editor")
    with LspClient(
        [node_toolchain.node, server, "--stdio"], cwd=workspace, timeout=TIMEOUT, settings=SETTINGS
    ) as client:
        client.initialize(
            workspace,
            capabilities={
                "textDocument": {
                    "completion": {"completionItem": {"snippetSupport": True}},
                    "publishDiagnostics": {"relatedInformation": True},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                }
            },
        )
        client.notify("workspace/didChangeConfiguration", {"settings": SETTINGS})
        yield Editor(client, workspace)


def algorithm_being_written(name: str) -> str:
    """A manifest with the cursor on the empty line inside an ``algorithm`` section."""
    return MODELINE + f"algorithm:\n  name: {name}\n  \nenvironment:\n  name: CartPole-v1\n"


def test_completion_in_a_dqn_section_offers_dqn_keys_only(editor: Editor) -> None:
    labels = editor.complete_at(algorithm_being_written("DQN"), "  ")
    assert {"tau", "double"} <= set(labels), labels
    assert "clip_coef" not in labels, f"a PPO key offered in a DQN section: {labels}"


def test_completion_in_a_ppo_section_offers_ppo_keys_only(editor: Editor) -> None:
    labels = editor.complete_at(algorithm_being_written("PPO"), "  ")
    assert "clip_coef" in labels, labels
    assert "double" not in labels, f"a DQN key offered in a PPO section: {labels}"


def test_completion_of_the_algorithm_name_offers_the_registered_algorithms(
    editor: Editor,
) -> None:
    text = MODELINE + "algorithm:\n  name: \nenvironment:\n  name: CartPole-v1\n"
    labels = editor.complete_at(text, "  name: ")
    assert {"DQN", "PPO", "RainbowDQN", "GRPO"} <= set(labels), labels


def test_an_unknown_key_is_reported_on_its_line(editor: Editor) -> None:
    text = MODELINE + (
        "algorithm:\n  name: DQN\n  learnstep: 5\nenvironment:\n  name: CartPole-v1\n"
    )
    line = text.splitlines().index("  learnstep: 5")

    errors = [d for d in editor.diagnostics(text) if d.get("severity") == ERROR]

    assert [(d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in errors] == [
        (line, 2)
    ], errors
    assert "learnstep" in errors[0]["message"], errors


VALID_MANIFEST = """\
version: 1
algorithm:
  name: DQN
  batch_size: 64
  lr: 0.001
  tau: 0.005
  double: true
environment:
  name: CartPole-v1
  num_envs: 4
network:
  latent_dim: 32
  encoder_config:
    arch: mlp
    hidden_size: [64]
  head_config:
    hidden_size: [64]
"""


def test_a_valid_manifest_has_no_errors(editor: Editor) -> None:
    parse_manifest(VALID_MANIFEST)  # the project's own loader agrees that it is valid

    diagnostics = editor.diagnostics(MODELINE + VALID_MANIFEST)

    assert [d for d in diagnostics if d.get("severity") == ERROR] == [], diagnostics
