"""The algorithm registry: algorithm names -> spec classes."""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from agilerl.models.base import AlgorithmBase

SpecT = TypeVar("SpecT", bound=type[AlgorithmBase])


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """What the registry knows about one algorithm."""

    spec_cls: type[AlgorithmBase]


class AlgorithmRegistry:
    """Central registry mapping algorithm names to their spec classes.

    Populated at import time by :func:`register` applied to each concrete spec class.
    """

    def __init__(self) -> None:
        self._entries: dict[str, RegistryEntry] = {}

    def add(self, name: str, spec_cls: type[AlgorithmBase]) -> None:
        """Register ``spec_cls`` under ``name``; warns when it replaces an entry."""
        if not (isinstance(spec_cls, type) and issubclass(spec_cls, AlgorithmBase)):
            raise TypeError(
                f"Cannot register {spec_cls!r} as {name!r}: not an algorithm spec class."
            )
        previous = self._entries.get(name)
        if previous is not None and previous.spec_cls is not spec_cls:
            warnings.warn(
                f"Overriding existing registration of algorithm {name!r} "
                f"({previous.spec_cls.__qualname__} -> {spec_cls.__qualname__}).",
                UserWarning,
                stacklevel=2,
            )
        self._entries[name] = RegistryEntry(spec_cls)

    def get(self, name: str) -> RegistryEntry:
        """Look up an entry by algorithm name (case-sensitive).

        Raises:
            KeyError: If ``name`` is not registered; the message lists the known names.
        """
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(self.not_registered(name)) from None

    def not_registered(self, name: object) -> str:
        """What every lookup of an unknown ``name`` says (the registry's ``KeyError``, the
        manifest's located error, the CLI and the trainer): that it is not registered,
        the closest registered name when one is close, and the registered names."""
        known = ", ".join(self.names()) or "(none)"
        same_letters = [known for known in self.names() if known.lower() == str(name).lower()]
        close = same_letters or difflib.get_close_matches(str(name), self.names(), n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"algorithm {name!r} is not registered{hint}; registered algorithms: {known}"

    def spec_class(self, name: object) -> type[AlgorithmBase] | None:
        """The spec class registered under ``name``; None for any other value."""
        entry = self._entries.get(name) if isinstance(name, str) else None
        return entry.spec_cls if entry is not None else None

    def names(self) -> list[str]:
        """Registered algorithm names, sorted."""
        return sorted(self._entries)

    def __repr__(self) -> str:
        # What it holds, not object() at an address: ``AlgorithmRegistry(CQN, DDPG, ...)``.
        return f"{type(self).__name__}({', '.join(self.names())})"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries  # a document's name may be a list

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)


ALGO_REGISTRY = AlgorithmRegistry()


def register(name: str | None = None) -> Callable[[SpecT], SpecT]:
    """Class decorator registering an algorithm spec in :data:`ALGO_REGISTRY`.

    The name defaults to the class name without its ``Spec`` suffix
    (``MyAlgoSpec`` -> ``"MyAlgo"``). The class is returned unchanged.
    """

    def decorator(spec_cls: SpecT) -> SpecT:
        ALGO_REGISTRY.add(name or spec_cls.__name__.removesuffix("Spec"), spec_cls)
        return spec_cls

    return decorator
