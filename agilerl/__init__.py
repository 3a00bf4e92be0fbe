"""AgileRL: deep reinforcement learning driven by JSON-Schema-first declarative specs.

Importing the package is cheap: the torch engine loads only when something is built or
a name of :data:`LAZY` is first used (``from agilerl import RLAlgorithm`` loads it;
``agilerl.__version__`` reads the installed distribution's metadata).

The package is grouped by what its parts do: :mod:`agilerl.guards` (user code and the
guards around it), :mod:`agilerl.files` (atomic writes, checkpoints, documents and their
schemas), :mod:`agilerl.resources` (this machine's memory, the meta device, the installed
distribution). A module that moved keeps its old import path (:data:`MOVED`).
"""

import importlib
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: Public names -> the module that defines them, imported on first use.
LAZY = {
    "__version__": "agilerl.version",
    "AgentType": "agilerl.models",
    "LocalTrainer": "agilerl.trainer",
    "RLAlgorithm": "agilerl.algorithms",
    "evaluate_agent": "agilerl.evaluation",
    "train_agent": "agilerl.one_agent",
}

#: Modules that once sat directly under ``agilerl`` -> where they live now. Code written
#: against the old paths (``from agilerl.documents import load_document``,
#: ``agilerl.observations.channels_first``) keeps working: importing an old path gives
#: the very module object of the new one (one set of classes, one module state), through
#: :class:`MovedModuleFinder`. The project itself imports the new paths only.
MOVED = {
    "agilerl.atomic": "agilerl.files.atomic",
    "agilerl.checkpoints": "agilerl.files.checkpoints",
    "agilerl.documents": "agilerl.files.documents",
    "agilerl.schema": "agilerl.files.schema",
    "agilerl.manifest_code": "agilerl.guards.manifest_code",
    "agilerl.recorded_code": "agilerl.guards.recorded_code",
    "agilerl.time_limit": "agilerl.guards.time_limit",
    "agilerl.user_code": "agilerl.guards.user_code",
    "agilerl.distribution": "agilerl.resources.distribution",
    "agilerl.host_memory": "agilerl.resources.host_memory",
    "agilerl.meta_device": "agilerl.resources.meta_device",
    "agilerl.finite": "agilerl.training.finite",
    "agilerl.observations": "agilerl.components.observations",
    "agilerl.starter": "agilerl.cli.starter",
    "agilerl.vectorize": "agilerl.families.single_agent.vectorize",
}

__all__ = [*LAZY]


class MovedModuleFinder:
    """Finds an old path of :data:`MOVED`; loading it imports the new module and puts
    that module in ``sys.modules`` under the old name too. The import system creates a
    placeholder module for the spec and then takes whatever ``sys.modules`` holds under
    the name once ``exec_module`` returns, so the new module is what the importer gets,
    and its own ``__name__`` and ``__spec__`` stay the new path's. (A finder and loader
    by protocol: ``importlib.abc`` would cost ``import agilerl`` several milliseconds.)"""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the placeholder; exec_module swaps the real module in

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, MovedModuleFinder())


def __getattr__(name: str) -> Any:
    if name not in LAZY:
        raise AttributeError(f"module 'agilerl' has no attribute {name!r}")
    return getattr(importlib.import_module(LAZY[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
