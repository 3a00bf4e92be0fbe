"""How much of the engine's typed surface is ``Any``: the share of annotated function
parameters under ``agilerl/`` (generated code excluded) whose annotation is ``Any``.

Usage: ``python benchmarks/any_share.py [--list] [--top N]``. A parameter counts when it
has an annotation (``self``/``cls`` and unannotated ones are not counted); it is ``Any``
when its annotation is exactly ``Any`` (``typing.Any``, ``t.Any`` or ``"Any"``), and
"mentions Any" when ``Any`` appears anywhere inside it (``dict[str, Any]``), which is
printed beside it. ``--list`` prints each ``Any`` parameter as ``file:line function(name)``;
``--top N`` the N modules with the most.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "agilerl"
SKIP = ("generated",)


def _is_any(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "Any"
    if isinstance(node, ast.Attribute):
        return node.attr == "Any"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip() == "Any"
    return False


def _mentions_any(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return "Any" in node.value
    return any(_is_any(sub) for sub in ast.walk(node) if isinstance(sub, ast.expr))


def parameters(path: Path):
    """(line, function, name, annotation) of every annotated parameter in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        every += [a for a in (args.vararg, args.kwarg) if a is not None]
        for arg in every:
            if arg.arg in ("self", "cls") or arg.annotation is None:
                continue
            yield arg.lineno, node.name, arg.arg, arg.annotation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--top", type=int, default=0)
    args = parser.parse_args()
    total = exact = mentions = 0
    per_module: Counter[str] = Counter()
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT.parent)
        if any(part in SKIP for part in relative.parts):
            continue
        for line, function, name, annotation in parameters(path):
            total += 1
            mentions += _mentions_any(annotation)
            if _is_any(annotation):
                exact += 1
                per_module[str(relative)] += 1
                if args.list:
                    print(f"{relative}:{line} {function}({name})")
    print(
        f"annotated parameters under agilerl/: {total:,}; Any: {exact:,} "
        f"({100 * exact / total:.1f}%); mentioning Any: {mentions:,} ({100 * mentions / total:.1f}%)"
    )
    for module, count in per_module.most_common(args.top):
        print(f"  {count:4d}  {module}")


if __name__ == "__main__":
    main()
