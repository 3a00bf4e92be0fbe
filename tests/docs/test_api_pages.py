"""The Python API pages (codegen/docs_api.py): one page per public module, the modules
read from the package's own tables, each spec class linked to its spec page."""

from __future__ import annotations

import agilerl.models
from agilerl import algorithms, training
from codegen.docs_api import api_modules, api_pages, module_file
from codegen.docs_specs import SchemaSet, page_name

MODULES = api_modules()
PAGES = api_pages(MODULES)


def test_the_public_modules_have_pages_and_exist():
    wanted = {
        "agilerl.models",
        "agilerl.trainer",
        "agilerl.evaluation",
        "agilerl.one_agent",
        "agilerl.training",
        "agilerl.training.callbacks",
        "agilerl.networks",
        *algorithms._LAZY.values(),
        *training.ENTRY_POINTS.values(),
    }
    assert wanted <= set(MODULES)
    for module in MODULES:
        assert module_file(module).exists(), module
        assert f"::: {module}" in PAGES[f"{module}.md"], module
        assert f"[`{module}`]({module}.md)" in PAGES["index.md"], module


def test_every_spec_class_links_to_its_spec_page():
    page = PAGES["agilerl.models.md"]
    files = {schema["title"]: file for file, schema in SchemaSet.load().schemas.items()}
    specs = [name for name in agilerl.models.__all__ if name in files]
    assert "DQNSpec" in specs and "TrainingManifest" in specs
    for name in specs:
        assert f"| `{name}` | [{name}](../specs/{page_name(files[name])}) |" in page
    # The hand-written members come from their docstrings; the generated ones do not.
    (members,) = [line for line in page.splitlines() if "members:" in line]
    assert "load_manifest" in members and "DQNSpec" not in members
