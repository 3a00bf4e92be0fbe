"""AgileRL's old spellings of manifest keys: read under their new names, with a warning.

AgileRL's manifests still use a few names it has since renamed (``memory_size`` for
``max_size``, ...). Refusing them would refuse those manifests for a spelling, so the
manifest loader reads each old key as its new name and says so: a
:class:`LegacyKeyWarning` naming the file, the line, the old and the new key
(``agilerl validate --strict`` refuses them instead). :data:`LEGACY_KEYS` is the one
table of them; the schemas declare the same keys (``patternProperties`` marked
``deprecated``, whose description an editor shows, and the keyword
:data:`RENAMED_KEYWORD` naming the new key) so that the JSON Schema validators accept
them, and tests/models/test_legacy.py holds the two to each other.

The old keys are not fields of the specs: a spec (and its dump) has one name for each
setting. The specs read them too (``SpecBase.prepare_document``, from the schema's
keyword), so that pydantic agrees with the schema on every document; only the loader
knows the file's lines. Where both spellings are given, equal values are read once;
different values are an error naming both keys, as nothing says which one was meant.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agilerl.models.validation import NOT_SHOWN, Issue, Locator

#: The schema keyword of an object that accepts old spellings: ``{old: new, ...}``.
RENAMED_KEYWORD = "x-agilerl-renamed"


@dataclass(frozen=True)
class LegacyKey:
    """An old spelling: ``old`` in the manifest object at ``section`` means ``new``."""

    #: Keys from the manifest's top to the object holding the key (``()``: the top).
    section: tuple[str, ...]
    old: str
    new: str

    @property
    def old_path(self) -> tuple[str, ...]:
        return (*self.section, self.old)

    @property
    def new_path(self) -> tuple[str, ...]:
        return (*self.section, self.new)


#: Every old spelling the loader reads (AgileRL's models accept each as an alias).
LEGACY_KEYS = (
    LegacyKey(("replay_buffer",), "memory_size", "max_size"),
    LegacyKey(("training",), "population_size", "pop_size"),
    LegacyKey(("training",), "metrics_interval", "evo_steps"),
    LegacyKey((), "tournament_selection", "selection_strategy"),
)


class LegacyKeyWarning(FutureWarning):
    """A manifest spells a key the old way (it is read under its new name).

    A FutureWarning, not a DeprecationWarning: Python shows FutureWarnings to the users of
    a program by default, and the people who write manifests are those users."""


# The messages are codegen/node/legacy.mjs's too, word for word.


def deprecated_message(old: str, new: str) -> str:
    """What a warning (or, under ``--strict``, an error) says of an old key."""
    return f"deprecated: AgileRL's old name of {new!r}, read as {new!r}; write {new!r}"


def both_given_message(old: str, new: str) -> str:
    return (
        f"deprecated: AgileRL's old name of {new!r}, which is given too, with the same "
        f"value; it is read once; remove {old!r}"
    )


def conflict_message(old: str, new: str) -> str:
    return (
        f"AgileRL's old name of {new!r}, and {new!r} is given too, with another value: "
        "keep one of the two keys"
    )


def json_equal(a: Any, b: Any) -> bool:
    """``a == b`` as JSON compares values: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(json_equal, a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers):
        return a == b
    return type(a) is type(b) and a == b


def renamed_conflicts(renamed: Mapping[str, str], instance: Any) -> Iterator[tuple[str, str]]:
    """``(old key, message)`` for each old spelling in ``instance`` (an object whose
    schema renames ``renamed``) given with its new name and another value."""
    if not isinstance(instance, Mapping):
        return
    for old, new in renamed.items():
        if old in instance and new in instance and not json_equal(instance[old], instance[new]):
            yield old, conflict_message(old, new)


@dataclass(frozen=True)
class Normalised:
    """A manifest document with its old spellings read under their new names."""

    data: Any
    #: One issue per old key found (a warning; an error under ``--strict``).
    deprecated: list[Issue] = field(default_factory=list)
    #: One issue per old key given with its new name and another value (an error).
    conflicts: list[Issue] = field(default_factory=list)
    #: New path -> old path, where a value was read from its old key.
    renamed: dict[tuple[Any, ...], tuple[Any, ...]] = field(default_factory=dict)

    def located(self, issue: Issue, locate: Locator | None) -> Issue:
        """``issue`` (found in :attr:`data`) at the place the document wrote it: under a
        renamed key, at the old key."""
        for new, old in self.renamed.items():
            if issue.path[: len(new)] == new:
                path = (*old, *issue.path[len(new) :])
                return Issue(path, issue.value, issue.message, locate(path) if locate else None)
        return issue


def read_old_keys(
    renamed: Mapping[str, str] | None, instance: Mapping[str, Any]
) -> tuple[Mapping[str, Any], dict[str, str]]:
    """``instance`` as its cross-field rules read it (old keys under their new names) and
    ``{new: old}`` where a value came from an old key, so that a rule broken by it is
    reported at the key the document wrote (the JSON Schema validators' side of what
    the loader and the specs do)."""
    if not renamed or renamed.keys().isdisjoint(instance):
        return instance, {}
    read_as = {new: old for old, new in renamed.items() if old in instance and new not in instance}
    return rename_old_keys(renamed, instance)[0], read_as


def rename_old_keys(
    renamed: Mapping[str, str], data: Mapping[str, Any]
) -> tuple[dict[str, Any], list[tuple[str, str]], list[tuple[str, str]]]:
    """``data`` (one object) with each old key of ``renamed`` (``{old: new}``) under its
    new name, key order kept, and ``(old, message)`` of each deprecation and of each
    conflict (an old key given with its new name and another value; the result keeps
    the new one, the caller reports the conflict)."""
    result = dict(data)
    deprecated: list[tuple[str, str]] = []
    conflicts: list[tuple[str, str]] = []
    for old, new in renamed.items():
        if old not in result:
            continue
        if new not in result:
            result = {(new if name == old else name): v for name, v in result.items()}
            deprecated.append((old, deprecated_message(old, new)))
            continue
        if json_equal(result[old], result[new]):
            deprecated.append((old, both_given_message(old, new)))
        else:
            conflicts.append((old, conflict_message(old, new)))
        del result[old]
    return result, deprecated, conflicts


#: The table by section: ``{section: {old: new}}``.
_BY_SECTION: dict[tuple[str, ...], dict[str, str]] = {}
for _key in LEGACY_KEYS:
    _BY_SECTION.setdefault(_key.section, {})[_key.old] = _key.new


def normalise_legacy_keys(data: Any, locate: Locator | None = None) -> Normalised:
    """``data`` (a manifest document) with every key of :data:`LEGACY_KEYS` under its new
    name, and what was found (``locate`` places each at its line in the file). ``data``
    itself is not changed: the objects that change are copied."""
    result = Normalised(data)
    for section_path, renamed in _BY_SECTION.items():
        section = _section(result.data, section_path)
        if section is None or renamed.keys().isdisjoint(section):
            continue
        changed, deprecated, conflicts = rename_old_keys(renamed, section)
        for old, message in deprecated:
            path = (*section_path, old)
            position = locate(path) if locate else None
            result.deprecated.append(Issue(path, NOT_SHOWN, message, position))
            if renamed[old] not in section:  # read from the old key: errors go there
                result.renamed[(*section_path, renamed[old])] = path
        for old, message in conflicts:
            path = (*section_path, old)
            position = locate(path) if locate else None
            result.conflicts.append(Issue(path, section[old], message, position))
        result = Normalised(
            _replaced(result.data, section_path, changed),
            result.deprecated,
            result.conflicts,
            result.renamed,
        )
    return result


def _section(data: Any, path: tuple[str, ...]) -> dict[str, Any] | None:
    node = data
    for part in path:
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _replaced(data: dict[str, Any], path: tuple[str, ...], section: dict[str, Any]) -> Any:
    """A copy of ``data`` with the object at ``path`` replaced by ``section``."""
    if not path:
        return section
    head, *rest = path
    return {**data, head: _replaced(data[head], tuple(rest), section)}
