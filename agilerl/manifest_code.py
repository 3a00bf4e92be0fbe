"""The code a manifest names: entry points, wrappers, environment modules, reward functions.

A manifest can name Python code that a run imports and calls, like a script does. This
module lists it without importing anything, so ``agilerl validate`` can show it and
``agilerl train`` can print it before the run imports it. The fields that name code are
one table, :data:`CODE_FIELDS`; the engine resolves targets with :func:`split_target`,
so what is listed is what is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agilerl.models.env import GymEnvSpec, LLMReasoningEnvSpec, PettingZooEnvSpec


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
    yield "reward_file_path", f"{env.reward_file_path}:{env.reward_fn_name}", env.reward_file_path


@dataclass(frozen=True)
class CodeField:
    """A field of a manifest section that names code."""

    section: str
    spec_types: tuple[type, ...]
    named: Callable[[Any], Iterator[Named]]
    #: Whether the file resolves against the manifest's directory (an LLM reward file)
    #: rather than the spec's ``path`` or the working directory.
    manifest_relative: bool = False


#: Every field of a manifest that names code. A new one (a reward model, a callback) is a
#: row here, and validate and train list it.
CODE_FIELDS: tuple[CodeField, ...] = (
    CodeField("environment", (GymEnvSpec, PettingZooEnvSpec), _entrypoint),
    CodeField("environment", (GymEnvSpec,), _gymnasium_module),
    CodeField("environment", (PettingZooEnvSpec,), _pettingzoo_module),
    CodeField("environment", (GymEnvSpec, PettingZooEnvSpec), _wrappers),
    CodeField("environment", (LLMReasoningEnvSpec,), _reward_function, manifest_relative=True),
)


def code_references(manifest: Any, base_dir: str | Path | None = None) -> list[CodeReference]:
    """Every piece of code the run of ``manifest`` would import, in the order it would;
    ``base_dir``: the manifest's directory, where its manifest-relative files lie."""
    refs = []
    for row in CODE_FIELDS:
        spec = getattr(manifest, row.section, None)
        if not isinstance(spec, row.spec_types):
            continue
        for path, target, module in row.named(spec):
            base = getattr(spec, "path", None)
            if row.manifest_relative and base_dir is not None:
                base = str(base_dir)
            refs.append(CodeReference(f"{row.section}.{path}", target, module, base))
    return refs
