"""The distribution: one name of its own in every install hint, a version read from the
installed metadata, and the files an installed package needs (py.typed, LICENSE,
CHANGELOG)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from support import ROOT

from agilerl.resources.distribution import DISTRIBUTION, install_command

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

#: A requirement naming the import package with an extra (``agilerl[llm]``): on the
#: package index that is the upstream library, never this one.
UPSTREAM_EXTRA = re.compile(rb"(?<![\w/.-])agilerl\[[\w-]+\]")
#: Where hints and requirements are written: the package, the specs (whose descriptions
#: editors show), the tooling and the documents.
SOURCES = [
    *sorted((ROOT / "agilerl").rglob("*.py")),
    *sorted((ROOT / "schemas").glob("*.json")),
    *sorted((ROOT / "generated").glob("*.py")),
    *sorted((ROOT / "codegen").glob("*.py")),
    *sorted((ROOT / "benchmarks").glob("*.py")),
    *sorted((ROOT / "tests").rglob("*.py")),
    ROOT / "README.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "CHANGELOG.md",
    ROOT / "pyproject.toml",
    ROOT / "noxfile.py",
]


def test_the_hints_name_the_distribution_pyproject_declares():
    assert PROJECT["name"] == DISTRIBUTION
    assert install_command("llm") == f"pip install '{PROJECT['name']}[llm]'"


def test_every_install_hint_of_the_package_is_built_from_the_one_constant():
    """A hint written out by hand would drift from the name; only distribution.py
    spells ``pip install <name>[extra]``, everything else calls install_command."""
    written = {
        path.relative_to(ROOT).as_posix(): match.group(0)
        for path in (ROOT / "agilerl").rglob("*.py")
        if path.name != "distribution.py"
        for match in re.finditer(r"pip install\s+['\"]?[\w.{}-]+\[", path.read_text())
    }
    assert written == {}


NEWLINE = b"\n"


def upstream_extras(path) -> list[str]:
    """``file:line: agilerl[extra]`` for each upstream requirement ``path`` writes."""
    text = path.read_bytes()
    return [
        f"{path.relative_to(ROOT)}:{text.count(NEWLINE, 0, m.start()) + 1}: {m.group(0).decode()}"
        for m in UPSTREAM_EXTRA.finditer(text)
    ]


def test_no_file_names_the_upstream_distribution_with_an_extra():
    # This file is left out: it spells the pattern's examples.
    found = [
        line
        for path in SOURCES
        if path.is_file() and path != Path(__file__)
        for line in upstream_extras(path)
    ]
    assert found == [], "\n".join(found)


def test_the_upstream_pattern_finds_a_hint_but_not_an_import():
    assert UPSTREAM_EXTRA.search(b"run pip install 'agilerl[llm]' first")
    assert UPSTREAM_EXTRA.search(b'    "agilerl[schema-tools]",')
    assert not UPSTREAM_EXTRA.search(b'sys.modules["agilerl"][0]; agilespec[llm]')


def test_the_extras_the_package_self_references_are_its_own():
    own = [
        dep
        for deps in PROJECT["optional-dependencies"].values()
        for dep in deps
        if dep.split("[")[0] in (DISTRIBUTION, "agilerl")
    ]
    assert own and all(dep.startswith(f"{DISTRIBUTION}[") for dep in own), own


def test_the_version_is_read_only_when_asked_for():
    # Whether importlib.metadata was loaded at start-up (a site .pth file may load it)
    # and after `import agilerl`: the import may not be what loads it.
    code = (
        "import sys, json; started = 'importlib.metadata' in sys.modules; import agilerl; "
        "imported = ['importlib.metadata' in sys.modules, 'agilerl.version' in sys.modules]; "
        "version = agilerl.__version__; "
        "print(json.dumps([started, imported, version, 'agilerl.version' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    started, (metadata_loaded, version_loaded), version, loaded_on_use = json.loads(out.stdout)
    assert metadata_loaded == started and version_loaded is False and loaded_on_use is True
    try:
        installed = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        installed = "0+unknown"
    assert version == installed


def test_an_installed_version_is_the_one_pyproject_declares():
    try:
        installed = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{DISTRIBUTION} is not installed here (a checkout on the path)")
    assert installed == PROJECT["version"], "reinstall: pip install -e ."


def test_without_installed_metadata_the_version_says_unknown(monkeypatch):
    import agilerl.version

    def absent(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", absent)
    try:
        assert importlib.reload(agilerl.version).__version__ == "0+unknown"
    finally:
        monkeypatch.undo()
        importlib.reload(agilerl.version)


def test_version_is_a_public_name_of_the_package():
    import agilerl

    assert "__version__" in agilerl.__all__ and "__version__" in dir(agilerl)


def test_the_package_ships_its_type_marker_and_schemas():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert (ROOT / "agilerl" / "py.typed").is_file()
    assert "py.typed" in data["package-data"]["agilerl"]
    assert data["package-dir"]["agilerl.schemas"] == "schemas"
    assert data["package-data"]["agilerl.schemas"] == ["*.schema.json"]


def test_the_license_is_the_one_pyproject_names():
    assert PROJECT["license"] == "Apache-2.0" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_changelog_has_an_entry_for_the_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(
        rf"^## \[{re.escape(PROJECT['version'])}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M
    )
    assert "Development Status :: 4 - Beta" in PROJECT["classifiers"]
