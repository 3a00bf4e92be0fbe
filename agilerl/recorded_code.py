"""The one gate between code a file names and the import of that code.

An agent file (and every agent inside a run checkpoint or a population file) records
the environment section it was trained on, so that ``agilerl evaluate a.pt`` can rebuild
it. That section may name code: an ``entrypoint``, ``wrappers``, a PettingZoo module, a
Gymnasium ``pkg:Env`` name, a ``path`` where modules and files are looked up first
(:data:`agilerl.manifest_code.CODE_FIELDS` lists them all). A checkpoint's SHA-256 is a
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
"""

from __future__ import annotations

from typing import Any

from agilerl.manifest_code import CodeReference, code_references

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


def untrusted_code(environment: Any) -> list[str]:
    """``field -> target (what)`` for each piece of code a built ``environment`` spec
    names outside :data:`TRUSTED_MODULES`, and for a ``path`` (modules are looked up
    there before anywhere else, so a trusted name can be shadowed by a file in it)."""
    found = []
    base = getattr(environment, "path", None)
    if base:
        found.append(f"environment.path -> {base} (a folder modules are imported from first)")
    refs: list[CodeReference] = code_references(_Section(environment))
    for ref in refs:
        if ref.is_file or not _trusted(ref.module):
            what = f"file {ref.module}" if ref.is_file else f"module {ref.module}"
            found.append(f"{ref.field} -> {ref.target} ({what})")
    return found


class _Section:
    """A manifest-shaped holder of one environment spec, for :func:`code_references`."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment


def check_recorded_code(source: str, environment: Any, *, trusted: bool) -> None:
    """Refuse (one line naming ``source``, the fields and the targets) an environment
    spec built from what a file records, when it names code outside
    :data:`TRUSTED_MODULES`; ``trusted``: the user passed :data:`TRUST_FLAG`."""
    found = untrusted_code(environment)
    if found and not trusted:
        raise RecordedCodeError(
            f"{source} names code to import: {'; '.join(found)}. Code an agent file names "
            "is never imported on its word (its checksum is no signature): name the "
            f"environment yourself with --env ID or --manifest FILE, or pass {TRUST_FLAG} "
            "if you trust whoever wrote the file"
        )
