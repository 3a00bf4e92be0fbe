"""The one gate between code a file names and the import of that code.

An agent file (and every agent inside a run checkpoint or a population file) records
the environment section it was trained on, so that ``agilerl evaluate a.pt`` can rebuild
it. That section may name code: an ``entrypoint``, ``wrappers``, a PettingZoo module, a
Gymnasium ``pkg:Env`` name, a ``path`` where modules and files are looked up first
(:data:`agilerl.guards.manifest_code.CODE_FIELDS` lists them all). A checkpoint's SHA-256 is a
checksum, not a signature: anyone can edit a file and recompute it, so what a file
names is what its last editor chose. Before anything is built from a *recorded*
section, :func:`check_recorded_code` refuses every code reference outside
:data:`TRUSTED_MODULES` unless the user named the code again (``--env`` / ``--manifest``,
which are then what is built) or passed ``--trust-agent-code``.

What is not refused, because it is data rather than code:

* a plain registered Gymnasium id (``CartPole-v1``): Gymnasium's registry maps it to
  code installed in the environment, which the file cannot change;
* table and dataset paths (a bandit's CSV files): read as data, never imported;
* the callables of :data:`TRUSTED_MODULES` (installed packages the engine builds
  environments from), called with the recorded ``config`` / ``kwargs`` as arguments.

The table trusts *installed* code, not names: a trusted name must resolve to the
installed distribution. A file beside the agent or in the working directory that would
answer to the name (``mpe2.py`` next to ``a.pt``, a ``pettingzoo/`` package: the archive
"agent + module, unpacked and evaluated in place") is refused by :func:`shadowing`,
found without executing anything; and the recorded section is then built by
:func:`installed_imports` with those folders off ``sys.path``, so that nothing the
trusted code imports in turn is looked up there either.
"""

from __future__ import annotations

import importlib.machinery
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from agilerl.guards.manifest_code import CodeReference, code_references

#: Module (and every module below it) -> why code it names may be built from a recorded
#: section without asking. Anything else (any other module, any ``.py`` file, anything
#: looked up under a recorded ``path``) is refused.
TRUSTED_MODULES: dict[str, str] = {
    "agilerl.testing": "the test environments this package ships (the cue games, probes)",
    "pettingzoo": "PettingZoo's installed environments (a name is a module with parallel_env)",
    "mpe2": "the MPE environments, installed with the multiagent extra",
    "gymnasium.wrappers": "Gymnasium's installed wrappers, applied to the built environment",
}

#: The flag that accepts every code reference of a recorded section.
TRUST_FLAG = "--trust-agent-code"


class RecordedCodeError(ValueError):
    """A recorded environment names code that is not imported without the user's word."""


def _trusted(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in TRUSTED_MODULES)


def _installed_roots() -> tuple[Path, ...]:
    """The folders installed code lives in: the environment's site-packages (a user's
    too), the standard library, and this package's own folder (:mod:`agilerl.testing`
    of an editable install)."""
    paths = sysconfig.get_paths()
    roots = [paths[key] for key in ("purelib", "platlib", "stdlib", "platstdlib")]
    roots += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    roots += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    roots.append(str(Path(__file__).resolve().parents[1]))  # agilerl/, above guards/
    return tuple(Path(root).resolve() for root in roots)


def _origin(spec: ModuleSpec) -> Path | None:
    """The file a module spec loads (a package's ``__init__``), None for a namespace
    package or a built-in module."""
    return Path(spec.origin).resolve() if spec.origin and Path(spec.origin).is_file() else None


def _find(name: str, path: Sequence[str] | None) -> ModuleSpec | None:
    """The spec the import system would find for ``name`` (a top-level module when
    ``path`` is the search path, a submodule when it is its package's ``__path__``),
    without executing any module: a module already imported is what an import returns."""
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__spec__", None) is not None:
        return loaded.__spec__
    if path is not None:
        return importlib.machinery.PathFinder.find_spec(name, list(path))
    for finder in sys.meta_path:  # an editable install's finder, the built-ins
        find_spec = getattr(finder, "find_spec", None)
        spec = find_spec(name, None) if find_spec is not None else None
        if spec is not None:
            return spec
    return None


def _resolve(module: str, search: Sequence[str]) -> list[ModuleSpec]:
    """The specs of ``module`` and each package above it, top first, as an import with
    ``search`` as ``sys.path`` finds them; shorter where a level is not found (the
    import then fails with its own error, naming the module)."""
    specs: list[ModuleSpec] = []
    locations: Sequence[str] | None = None
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        spec = _find(name, search) if depth == 1 else _find(name, locations)
        if spec is None and depth == 1:
            spec = _find(name, None)  # not on the path: a meta path finder's module
        if spec is None:
            break
        specs.append(spec)
        locations = spec.submodule_search_locations
        if locations is None:
            break
    return specs


def _off(folders: Iterable[Path], entries: Iterable[str]) -> list[str]:
    """``entries`` of a search path without those that are one of ``folders`` (``""`` is
    the working directory, a relative entry counts from it)."""
    off = {folder.resolve() for folder in folders}
    return [entry for entry in entries if Path(entry or ".").resolve() not in off]


def shadowing(module: str, beside: Sequence[Path]) -> str | None:
    """Why trusted ``module`` would not be the installed code: a module of its name in
    one of the folders ``beside`` (the working directory, the agent file's folder) other
    than the installed one, no installed module of the name, or one outside the
    installed packages. None when the name is the installed distribution's. Nothing is
    executed: specs are looked up, not imported."""
    top = module.split(".")[0]
    installed = _resolve(module, _off(beside, sys.path))
    installed_file = _origin(installed[0]) if installed else None
    for folder in beside:
        local = importlib.machinery.PathFinder.find_spec(top, [str(folder.resolve())])
        local_file = None if local is None else _origin(local)
        if local_file is not None and local_file != installed_file:
            return (
                f"{local_file} would be imported instead of the installed {top}: move or rename it"
            )
    if not installed:
        return f"{top} is not installed"
    roots = _installed_roots()
    for spec in installed:
        file = _origin(spec)
        if file is not None and not any(file.is_relative_to(root) for root in roots):
            return f"{spec.name} is {file}, outside the installed packages"
    return None


@contextmanager
def installed_imports(beside: Sequence[Path]) -> Iterator[None]:
    """``sys.path`` without the folders ``beside`` (and ``""``, the working directory)
    while a recorded section is built and run: the trusted code a file names, and every
    module that code imports in turn, come from the installed packages only."""
    saved = list(sys.path)
    sys.path[:] = _off([*beside, Path.cwd()], saved)
    try:
        yield
    finally:
        sys.path[:] = saved


def untrusted_code(environment: Any, beside: Sequence[Path] = ()) -> list[str]:
    """``field -> target (what)`` for each piece of code a built ``environment`` spec
    names outside :data:`TRUSTED_MODULES`, for a ``path`` (modules are looked up there
    before anywhere else, so a trusted name can be shadowed by a file in it), and for a
    trusted name that a module in one of the folders ``beside`` would answer to
    (:func:`shadowing`)."""
    found = []
    base = getattr(environment, "path", None)
    if base:
        found.append(f"environment.path -> {base} (a folder modules are imported from first)")
    refs: list[CodeReference] = code_references(_Section(environment))
    for ref in refs:
        if ref.is_file or not _trusted(ref.module):
            what = f"file {ref.module}" if ref.is_file else f"module {ref.module}"
            found.append(f"{ref.field} -> {ref.target} ({what})")
        elif (why := shadowing(ref.module, beside)) is not None:
            found.append(f"{ref.field} -> {ref.target} (module {ref.module}; {why})")
    return found


class _Section:
    """A manifest-shaped holder of one environment spec, for :func:`code_references`."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment


def check_recorded_code(
    source: str, environment: Any, *, trusted: bool, beside: Sequence[Path] = ()
) -> None:
    """Refuse (one line naming ``source``, the fields and the targets) an environment
    spec built from what a file records, when it names code outside
    :data:`TRUSTED_MODULES` or a trusted name that a module in the folders ``beside``
    would answer to; ``trusted``: the user passed :data:`TRUST_FLAG`."""
    if trusted:
        return
    found = untrusted_code(environment, beside)
    if found:
        raise RecordedCodeError(
            f"{source} names code to import: {'; '.join(found)}. Code an agent file names "
            "is never imported on its word (its checksum is no signature): name the "
            f"environment yourself with --env ID or --manifest FILE, or pass {TRUST_FLAG} "
            "if you trust whoever wrote the file"
        )
