"""The import graph of ``agilerl`` runs one way (docs/developing.md, "Families"):

``cli -> trainer -> families -> training + algorithms -> components / networks /
modules -> models``.

Every ``import`` statement of every module is read with :mod:`ast`, function-local ones
included (an import inside a function is still an arrow; hiding one there is how cycles
hid before). A lookup by name through :mod:`importlib` (``algo_class()``,
``get_training_fn()``, the lazy names of a package ``__init__``) is not an import
statement and is the sanctioned way for a lower layer to name a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from support import ROOT

PACKAGE = ROOT / "agilerl"

#: Layer of each area, highest first; a module may import its own layer or lower ones.
#: The most specific prefix decides.
LAYERS: dict[str, int] = {
    "agilerl.cli": 90,
    "agilerl.__main__": 90,
    "agilerl.one_agent": 85,
    "agilerl.trainer": 80,
    "agilerl.evaluation": 80,
    "agilerl.families": 70,
    # which of the num_envs ways to run copies: read by ``agilerl validate``, imports no engine
    "agilerl.families.single_agent.vectorize": 10,
    "agilerl.training": 60,
    # the finiteness checks: data loaded by families, figures the generation loop reports
    "agilerl.training.finite": 10,
    # stacked algorithms: above the algorithms it stacks, below the loop that forms cohorts
    "agilerl.cohorts": 57,
    "agilerl.hpo": 55,
    "agilerl.algorithms": 50,
    "agilerl.components": 40,
    "agilerl.networks": 40,
    "agilerl.modules": 30,
    "agilerl.llm": 30,
    "agilerl.distributed": 30,
    # observation trees: what buffers, algorithms and the loops walk
    "agilerl.components.observations": 30,
    "agilerl.testing": 30,
    # files and checkpoints: the checkpoint format above the writes and reads it uses
    "agilerl.files": 20,
    "agilerl.files.atomic": 10,
    "agilerl.files.documents": 0,
    "agilerl.files.schema": 0,
    # user code and its guards
    "agilerl.guards": 10,
    # machine resources; the distribution's name is read by the package version too
    "agilerl.resources": 10,
    "agilerl.resources.distribution": 0,
    "agilerl.models": 0,
    "agilerl.version": 0,
    "agilerl._generated": 0,
    "agilerl": 0,  # the package root: lazy names only
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str:
    """The module (or package) of this package that ``name`` refers to."""
    while name not in MODULES and "." in name:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> set[str]:
    """Every module of this package that ``module`` has an import statement of."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            names = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        found |= {_resolve(n) for n in names if n == "agilerl" or n.startswith("agilerl.")}
    found.discard(module)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def layer(module: str) -> tuple[str, int]:
    area = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return area, LAYERS[area]


def test_every_module_has_a_layer():
    assert all(layer(module) for module in MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_one_way(module):
    area, rank = layer(module)
    upward = []
    for target in sorted(GRAPH[module]):
        target_area, target_rank = layer(target)
        if target_area == "agilerl" and target != "agilerl":
            continue
        if target_rank > rank:
            upward.append(f"{module} ({area}) imports {target} ({target_area})")
    assert not upward, "\n".join(upward)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _without_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph without arrows into a package ``__init__`` from its own modules: a
    package's ``__init__`` re-exporting its modules, which import siblings through it, is
    one unit, not a cycle between areas."""
    return {
        module: {
            t
            for t in targets
            if not (MODULES[t].name == "__init__.py" and module.startswith(t + "."))
        }
        for module, targets in graph.items()
    }


def test_no_import_cycles():
    found = cycles(_without_package_inits(GRAPH))
    assert found == [], "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_an_upward_import_is_reported(monkeypatch):
    monkeypatch.setitem(GRAPH, "agilerl.models.base", {"agilerl.trainer"})
    with pytest.raises(AssertionError, match="agilerl.models.base .* imports agilerl.trainer"):
        test_imports_run_one_way("agilerl.models.base")
