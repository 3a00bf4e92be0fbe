"""MkDocs hook: build the manifest playground (docs/playground.md) into the site.

At each build it bundles the browser validator (``node codegen/node/playground/build.mjs``:
the ajv setup and error locating of ``codegen/node/check.mjs``, the schemas and the
example manifests of ``configs/`` embedded) and adds the bundle, its stylesheet and a copy
of ``schemas/`` (``schemas/<file>.schema.json`` in the site) as site files, with the
``x-agilerl-rules`` meta-schema at its ``$id``'s place
(``schemas/meta/x-agilerl-rules.schema.json``, from ``codegen/rules.schema.json``). The bundle is
never committed, so the page always validates against the schemas of this checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

ROOT = Path(__file__).resolve().parents[2]
NODE_PROJECT = ROOT / "codegen" / "node"
BUILD_SCRIPT = NODE_PROJECT / "playground" / "build.mjs"
#: Where the bundle lies in the site (the page's script and stylesheet).
ASSETS = "assets/playground"
SCRIPT = f"{ASSETS}/playground.js"
STYLESHEET = f"{ASSETS}/playground.css"
#: Where the x-agilerl-rules meta-schema lies in the site (its $id's path).
RULES_META_SCHEMA = "schemas/meta/x-agilerl-rules.schema.json"

_out = tempfile.TemporaryDirectory(prefix="agilerl-playground-")


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Load the bundle and its stylesheet on the playground's page alone (about 100 KB
    gzipped: the other pages have no use for it; the theme's instant navigation, which
    would need it on every page, is not enabled)."""
    if page.file.src_uri != "playground.md":
        return output
    script, stylesheet = (get_relative_url(uri, page.url) for uri in (SCRIPT, STYLESHEET))
    output = output.replace("</head>", f'<link rel="stylesheet" href="{stylesheet}">\n</head>', 1)
    return output.replace("</body>", f'<script src="{script}"></script>\n</body>', 1)


def _bundle(out: Path) -> None:
    node = shutil.which("node")
    if node is None:
        raise PluginError("playground: node is not on PATH (Node.js >= 20 builds the playground)")
    if not (NODE_PROJECT / "node_modules").is_dir():
        raise PluginError(
            "playground: codegen/node/node_modules is missing: run `npm ci --prefix codegen/node`"
        )
    result = subprocess.run(
        [node, str(BUILD_SCRIPT), str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise PluginError(f"playground: {BUILD_SCRIPT.relative_to(ROOT)} failed:\n{result.stderr}")


def on_files(files: Files, config: Any) -> Files:
    """Add the freshly built bundle and the schemas to the site."""
    out = Path(_out.name)
    _bundle(out)
    generated = [(f"{ASSETS}/{path.name}", path) for path in sorted(out.iterdir())]
    generated += [
        (f"schemas/{path.name}", path) for path in sorted((ROOT / "schemas").glob("*.schema.json"))
    ]
    # Kept beside the lint that reads it: under schemas/ the code generator would take it
    # for a spec. Published where its $id says.
    generated.append((RULES_META_SCHEMA, ROOT / "codegen" / "rules.schema.json"))
    for uri, path in generated:
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files
