"""The old import paths of modules that moved into folders (``agilerl.MOVED``) keep
working, as the very module of the new path; and the package root stays small."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from support import ROOT

import agilerl


@pytest.mark.parametrize("old", sorted(agilerl.MOVED))
def test_an_old_path_is_the_new_module(old):
    new = agilerl.MOVED[old]
    assert importlib.import_module(old) is importlib.import_module(new)
    module = sys.modules[new]
    assert module.__name__ == new and module.__spec__.name == new  # not renamed by the alias


@pytest.mark.parametrize("old", sorted(agilerl.MOVED))
def test_an_old_path_is_no_file_of_its_own(old):
    # A module or package left at the old path would be found before the alias.
    relative = old.split(".")[1:]
    assert not ROOT.joinpath("agilerl", *relative).with_suffix(".py").exists()
    assert not ROOT.joinpath("agilerl", *relative).is_dir()


def test_old_paths_work_in_a_fresh_interpreter():
    code = (
        "import sys\n"
        "from agilerl.documents import load_document\n"
        "from agilerl import checkpoints\n"
        "import agilerl.observations as old\n"
        "import agilerl.components.observations as new\n"
        "import agilerl.files.documents as documents\n"
        "assert old is new and load_document is documents.load_document\n"
        "assert checkpoints is sys.modules['agilerl.files.checkpoints']\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_name_that_never_existed_is_still_not_found():
    with pytest.raises(ModuleNotFoundError, match="agilerl.no_such_module"):
        importlib.import_module("agilerl.no_such_module")


def test_at_most_eight_modules_sit_directly_under_the_package():
    top = sorted(p.name for p in (ROOT / "agilerl").glob("*.py"))
    assert len(top) <= 8, top


def _old_path_imports(path, root=ROOT):
    """The old paths of :data:`agilerl.MOVED` that the file at ``path`` imports."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno} {n}" for n in names if n in agilerl.MOVED
        ]
    return found


def test_the_project_imports_only_the_new_paths():
    # The old paths are for users' code; the project's own code names where a module is.
    folders = ("agilerl", "tests", "benchmarks", "codegen", "examples", "docs")
    files = [
        path
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.name != "test_moved_paths.py" and "node_modules" not in path.parts
    ]
    found = [line for path in files for line in _old_path_imports(path)]
    assert found == [], "\n".join(found)


def test_an_old_path_import_is_found(tmp_path):
    source = tmp_path / "user.py"
    source.write_text(
        "import agilerl.documents\nfrom agilerl import trainer\n"
        "from agilerl.files import atomic\nfrom agilerl.observations import map_tree\n"
    )
    assert _old_path_imports(source, tmp_path) == [
        "user.py:1 agilerl.documents",
        "user.py:4 agilerl.observations",
    ]
