"""Count the literal defaults that algorithm constructors write (issue 49).

A hyperparameter's default lives in its JSON Schema; an algorithm class bound to its spec
(``class DQN(RLAlgorithm, spec=DQNSpec)``) derives its constructor's defaults from it. This
script walks every ``__init__`` of a class under ``agilerl/algorithms/`` and counts the
parameters whose default is written as a literal (a number, string, boolean, None, or a
negated number), split into the two kinds:

* *restated hyperparameters*: the parameter is a field (``hp_config`` aside) of the spec
  of an algorithm that is the class or derives from it (the schema states it, so the
  literal restates it);
* *other literals*: everything else (``index=0``, ``device="cpu"``, ``seed=None``, the
  runtime arguments no schema holds), listed so the count can be read.

Run from the repository root: ``python benchmarks/restated_defaults.py [-v] [--root PATH]``
(with ``PYTHONPATH`` set to the tree counted).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: The checkout counted: this one, or ``--root PATH`` (another commit's tree, to compare).
ROOT = Path(__file__).resolve().parents[1]
if "--root" in sys.argv:
    ROOT = Path(sys.argv[sys.argv.index("--root") + 1]).resolve()


def is_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)


def stated_fields() -> dict[str, set[str]]:
    """Class name -> the hyperparameters a schema states for it: the fields (``hp_config``
    aside) of the spec of every registered algorithm that is that class or derives from
    it (a base such as ``LLMAlgorithm`` restates what its subclasses' schemas state)."""
    sys.path.insert(0, str(ROOT))
    import agilerl.algorithms as algorithms
    import agilerl.models  # noqa: F401  (registers every algorithm spec)
    from agilerl.models.registry import ALGO_REGISTRY

    stated: dict[str, set[str]] = {}
    for name in ALGO_REGISTRY.names():
        spec, algo = ALGO_REGISTRY.spec_class(name), getattr(algorithms, name, None)
        if spec is None or algo is None:
            continue
        fields = set(spec.model_fields) - {"hp_config"}
        for klass in algo.__mro__:
            stated.setdefault(klass.__name__, set()).update(fields)
    # The keywords every agent takes (the RNG seed, the device, ...) are the base's own,
    # though an LLM schema names a ``seed`` field too.
    stated["EvolvableAlgorithm"] = set()
    return stated


def constructor_literals() -> list[tuple[str, str, str]]:
    """``(file:line, Class.__init__, parameter)`` of each literal default."""
    found = []
    for path in sorted((ROOT / "agilerl" / "algorithms").rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for fn in cls.body:
                if not (isinstance(fn, ast.FunctionDef) and fn.name == "__init__"):
                    continue
                args = fn.args
                positional = [*args.posonlyargs, *args.args]
                pairs = list(
                    zip(
                        positional[len(positional) - len(args.defaults) :],
                        args.defaults,
                        strict=True,
                    )
                )
                pairs += [
                    (a, d)
                    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                    if d is not None
                ]
                for arg, default in pairs:
                    if is_literal(default):
                        where = f"{path.relative_to(ROOT)}:{arg.lineno}"
                        found.append((where, f"{cls.name}.__init__", arg.arg))
    return found


def main() -> None:
    stated = stated_fields()
    literals = constructor_literals()

    def restates(item: tuple[str, str, str]) -> bool:
        return item[2] in stated.get(item[1].split(".")[0], set())

    restated = [item for item in literals if restates(item)]
    other = [item for item in literals if not restates(item)]
    print(f"literal defaults in algorithm constructors: {len(literals)}")
    print(f"  restated hyperparameters (fields of the class's specs): {len(restated)}")
    print(f"  other literals (not a spec field): {len(other)}")
    if "-v" in sys.argv[1:]:
        for title, items in (("restated", restated), ("other", other)):
            for where, owner, name in items:
                print(f"{title:9} {where:48} {owner}: {name}")


if __name__ == "__main__":
    main()
