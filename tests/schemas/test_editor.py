"""An editor completes and checks training manifests from schemas/.

A real yaml-language-server (the engine of the VS Code YAML extension and of most
other editors' YAML support; installed from ``codegen/node/package-lock.json``) is
driven over LSP the way an editor drives it. A manifest names its schema with a modeline
on its first line: the manifests written here use the file URI,

    # yaml-language-server: $schema=file:///.../schemas/manifest.schema.json

and the shipped ones in configs/, opened at their own path, the relative
``$schema=../schemas/manifest.schema.json`` (resolved against the manifest's location).

How the schemas stay offline: every schema has an ``https://agilerl.dev/...`` ``$id``,
so a relative ``$ref`` such as ``dqn.schema.json#/$defs/DQNFields`` resolves, per JSON
Schema, to ``https://agilerl.dev/schemas/dqn.schema.json``. yaml-language-server (since
1.21) first looks for a file of that name next to the ``file://`` schema that holds the
``$ref`` and only fetches the URL when there is none; all our schemas are siblings, so
nothing is fetched. To keep it that way, the settings below send any HTTP(S) request to
a closed local port: a fetch fails at once with a "Problems loading reference"
diagnostic, which the no-errors tests report, instead of going to the network or hanging
on it. The SchemaStore catalog (fetched from the web by default) is off.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REQUIRE_NODE_ENV, NodeToolchain
from support import ROOT
from support.lsp_client import LspClient

from agilerl.models.manifest import load_manifest

pytestmark = pytest.mark.node

MANIFEST_SCHEMA = ROOT / "schemas" / "manifest.schema.json"
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
def editor(
    node_toolchain: NodeToolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Editor]:
    """One yaml-language-server for the module, initialised like an editor does."""
    server = node_toolchain.project / SERVER_BIN
    if not server.is_file():
        problem = f"{server.relative_to(ROOT)} is missing (run `npm ci` in codegen/node)"
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


def _algorithm_names() -> list[str]:
    """The ``name`` of every algorithm section of the manifest schema."""
    sections = json.loads(MANIFEST_SCHEMA.read_text())["properties"]["algorithm"]["oneOf"]
    return [section["properties"]["name"]["const"] for section in sections]


#: yaml-language-server offers the `name` values of only the oneOf branches that match
#: the half-written section best (fewest problems: baseValidator.genericComparison). With
#: `name` still empty, a branch that requires another key (GRPO: `group_size`) has one
#: problem more than the others and its name is not offered. An `enum` of all names in
#: the union's own `properties` (beside the `oneOf`) would be offered whatever matches.
@pytest.mark.parametrize("name", _algorithm_names())
def test_completion_of_the_algorithm_name_offers_it(editor: Editor, name: str) -> None:
    text = MODELINE + "algorithm:\n  name: \nenvironment:\n  name: CartPole-v1\n"
    labels = editor.complete_at(text, "  name: ")
    assert name in labels, labels


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


def test_a_valid_manifest_has_no_errors(editor: Editor, tmp_path: Path) -> None:
    (tmp_path / "manifest.yaml").write_text(VALID_MANIFEST)
    load_manifest(tmp_path / "manifest.yaml")  # the project's own loader agrees: valid

    diagnostics = editor.diagnostics(MODELINE + VALID_MANIFEST)

    assert [d for d in diagnostics if d.get("severity") == ERROR] == [], diagnostics


CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=[path.name for path in CONFIGS])
def test_the_shipped_manifests_have_no_errors(editor: Editor, config: Path) -> None:
    """configs/ as an editor opens them: at their own path, with their relative modeline."""
    text = config.read_text()
    uri = editor.client.open_document(config, text)
    diagnostics = editor.client.wait_for_diagnostics(uri)

    assert [d for d in diagnostics if d.get("severity") == ERROR] == [], diagnostics

    # Not silence for want of a schema: the same text with a stray key, opened beside it
    # (never written), is checked against the schema the modeline names.
    stray = config.with_name(f"_stray_{config.name}")
    uri = editor.client.open_document(stray, text + "stray_key: 1\n")
    messages = [d["message"] for d in editor.client.wait_for_diagnostics(uri)]
    assert any("stray_key" in message for message in messages), messages


def test_an_old_spelling_is_no_error_and_its_hover_names_the_new_key(editor: Editor) -> None:
    """AgileRL's old keys (agilerl/models/legacy.py) are valid, so no error; hovering one
    shows its schema description, which names the new key. (The schema gives them no
    ``deprecationMessage``: yaml-language-server turns every warning, that one included,
    into an error, which would mark a valid manifest as broken.)"""
    text = MODELINE + (
        "algorithm:\n  name: DQN\nenvironment:\n  name: CartPole-v1\n"
        "replay_buffer:\n  memory_size: 1000\n"
    )
    line = text.splitlines().index("  memory_size: 1000")

    uri = editor.open(text)
    diagnostics = editor.client.wait_for_diagnostics(uri)
    hover = editor.client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": line, "character": 4}},
    )

    assert [d for d in diagnostics if d.get("severity") == ERROR] == [], diagnostics
    shown = hover["contents"]["value"].replace("\\", "")  # markdown escapes: max\_size
    assert "Deprecated: AgileRL's old name of `max_size`" in shown, hover
