"""The code a manifest names: entry points, wrappers, environment modules, reward functions.

A manifest can name Python code that a run imports and calls, like a script does. This
module lists it without importing anything, so ``agilerl validate`` can show it and
``agilerl train`` can print it before the run imports it. The fields that name code are
one table, :data:`CODE_FIELDS`; the engine resolves targets with :func:`split_target`,
so what is listed is what is imported.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.models.env import (
    BanditEnvSpec,
    GymEnvFields,
    LLMReasoningEnvSpec,
    PzEnvSpec,
)


def split_target(target: str) -> tuple[str, str]:
    """``(module or file, attribute)`` of ``pkg.mod:attr``, ``file.py:attr`` or ``pkg.mod.Attr``."""
    if ":" in target:
        module, attribute = target.split(":", 1)
    else:
        module, _, attribute = target.rpartition(".")
    return module, attribute


@dataclass(frozen=True)
class CodeReference:
    """One piece of code a run would import: the field naming it, the target as written
    and the module or file it comes from."""

    field: str
    target: str
    module: str
    base: str | None  # the spec's ``path``: where files (and modules first) are looked up

    @property
    def is_file(self) -> bool:
        return self.module.endswith(".py")

    @property
    def file(self) -> Path | None:
        """The file imported, resolved as the run resolves it; None for a module."""
        base = Path(self.base) if self.base else Path.cwd()
        return (base / self.module).resolve() if self.is_file else None

    def source(self) -> str:
        if self.file is not None:
            return f"file {self.file}"
        if self.base:
            return f"module {self.module}, looked up in {Path(self.base).resolve()} first"
        return f"module {self.module}"

    def line(self) -> str:
        missing = "; no such file yet" if self.file is not None and not self.file.is_file() else ""
        return (
            f"code: {self.field} -> {self.target} ({self.source()}, imported when the run "
            f"starts{missing})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "target": self.target,
            "kind": "file" if self.is_file else "module",
            "source": self.source(),
        }


#: What a field names: (dotted path below the section, target as written, module or file).
Named = tuple[str, str, str]


def _entrypoint(env: Any) -> Iterator[Named]:
    if env.entrypoint is not None:
        yield "entrypoint", env.entrypoint, split_target(env.entrypoint)[0]


def _wrappers(env: Any) -> Iterator[Named]:
    for i, wrapper in enumerate(env.wrappers or []):
        target = wrapper if isinstance(wrapper, str) else wrapper.wrapper
        yield f"wrappers.{i}", target, split_target(target)[0]


def _gymnasium_module(env: Any) -> Iterator[Named]:
    # gymnasium.make("pkg:Env-v0") imports pkg before looking the id up.
    if env.entrypoint is None and ":" in env.name:
        yield "name", env.name, env.name.split(":", 1)[0]


def _pettingzoo_module(env: Any) -> Iterator[Named]:
    if env.entrypoint is None:  # the name is a module whose parallel_env builds the env
        yield "name", f"{env.name}:parallel_env", env.name


def _reward_function(env: Any) -> Iterator[Named]:
    if env.reward_file_path is not None:  # a multi-turn section has none
        yield (
            "reward_file_path",
            f"{env.reward_file_path}:{env.reward_fn_name}",
            env.reward_file_path,
        )


@dataclass(frozen=True)
class CodeField:
    """A field of a manifest section that names code."""

    section: str
    spec_types: tuple[type, ...]
    named: Callable[[Any], Iterator[Named]]
    #: Whether the file resolves against the manifest's directory (an LLM reward file)
    #: rather than the spec's ``path``.
    manifest_relative: bool = False
    #: Whether the engine looks the code up under the spec's ``path`` (an entry point, a
    #: wrapper), which :func:`anchored` fills in from the manifest's folder.
    under_path: bool = False


#: Every field of a manifest that names code. A new one (a reward model, a callback) is a
#: row here, and validate and train list it.
CODE_FIELDS: tuple[CodeField, ...] = (
    # GymEnvFields: a Gymnasium environment section, an offline one's included
    CodeField(
        "environment",
        (GymEnvFields, PzEnvSpec, BanditEnvSpec),
        _entrypoint,
        under_path=True,
    ),
    CodeField("environment", (GymEnvFields,), _gymnasium_module),
    CodeField("environment", (PzEnvSpec,), _pettingzoo_module),
    CodeField("environment", (GymEnvFields, PzEnvSpec), _wrappers, under_path=True),
    CodeField("environment", (LLMReasoningEnvSpec,), _reward_function, manifest_relative=True),
    # a multi-turn LLM environment's class or factory, looked up in the manifest's folder
    CodeField("environment", (LLMReasoningEnvSpec,), _entrypoint, manifest_relative=True),
)


def code_references(manifest: Any, base_dir: str | Path | None = None) -> list[CodeReference]:
    """Every piece of code the run of ``manifest`` would import, in the order it would;
    ``base_dir``: the manifest's directory, where its manifest-relative files lie."""
    refs = []
    for row in CODE_FIELDS:
        spec = getattr(manifest, row.section, None)
        if not isinstance(spec, row.spec_types):
            continue
        if base_dir is not None:  # listed as the run will look it up
            spec = anchored(spec, base_dir)
        for path, target, module in row.named(spec):
            base = getattr(spec, "path", None)
            if row.manifest_relative and base_dir is not None:
                base = str(base_dir)
            refs.append(CodeReference(f"{row.section}.{path}", target, module, base))
    return refs


def _under_path(spec: Any) -> list[str]:
    """The modules and files ``spec`` names that the engine looks up under its ``path``."""
    return [
        module
        for row in CODE_FIELDS
        if row.under_path and isinstance(spec, row.spec_types)
        for _, _, module in row.named(spec)
    ]


def _only_in(module: str, folder: Path) -> bool:
    """Whether the top package of ``module`` lies in ``folder`` and nowhere else Python
    would import it from (an installed package, the standard library): found without
    importing anything."""
    top = module.split(".")[0]
    if not ((folder / f"{top}.py").is_file() or (folder / top).is_dir()):
        return False
    if top in sys.builtin_module_names:
        return False
    # "" on sys.path is the working directory, which counts as elsewhere unless it is folder
    elsewhere = [entry for entry in sys.path if Path(entry or ".").resolve() != folder]
    return importlib.machinery.PathFinder.find_spec(top, elsewhere) is None


def anchored(spec: Any, base_dir: str | Path) -> Any:
    """``spec`` (an environment section) with the folder its entry point and wrappers are
    looked up in made absolute, so that it builds from any working directory (a saved
    agent records it; ``agilerl evaluate`` rebuilds it from elsewhere).

    ``base_dir`` is the manifest's folder (the working directory for a spec given in
    Python): a relative ``path`` starts there, as every other path of a manifest does.
    Without a ``path``, the folder becomes ``base_dir`` where the spec names a file
    (``corridor.py:make``) or a module that only ``base_dir`` holds; a spec naming only
    installed modules (``gymnasium.wrappers``, ``agilerl.testing``) is returned as it is,
    since a recorded ``path`` is a folder modules are imported from first, which
    ``agilerl evaluate`` asks the user to trust (:mod:`agilerl.guards.recorded_code`)."""
    if not any(row.under_path and isinstance(spec, row.spec_types) for row in CODE_FIELDS):
        return spec  # a section without code looked up under a path (an LLM dataset)
    base = Path(base_dir).expanduser().resolve()
    if spec.path is not None:
        folder = base / Path(spec.path).expanduser()  # an absolute path stays as it is
    elif any(m.endswith(".py") or _only_in(m, base) for m in _under_path(spec)):
        folder = base
    else:
        return spec
    return spec.model_copy(update={"path": str(folder.resolve())})
