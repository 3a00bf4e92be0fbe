"""Training manifests: a whole run in one YAML (or JSON) document.

The schema is ``schemas/manifest.schema.json``; the class is generated from it and its
dependent sections are resolved by :class:`agilerl.models.manifest_base.ManifestBase`.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

# The section specs must be registered before a manifest can resolve them.
import agilerl.models.env  # noqa: F401
import agilerl.models.hpo  # noqa: F401
import agilerl.models.training  # noqa: F401
from agilerl.models.legacy import LegacyKeyWarning, normalise_legacy_keys
from agilerl.models.rules import compile_rules
from agilerl.models.validation import Issue, SpecError, parse_spec

if TYPE_CHECKING:
    # Type checkers cannot follow the install-time mapping of ``agilerl._generated`` to
    # ``generated/`` (pyproject ``package-dir``); they read the same files from the tree.
    from generated.manifest_schema import NetworkSection, TrainingManifest
else:
    from agilerl._generated.manifest_schema import NetworkSection, TrainingManifest

__all__ = [
    "NetworkSection",
    "TrainingManifest",
    "dump_manifest",
    "load_manifest",
    "manifest_document",
    "manifest_rule_issues",
    "parse_manifest",
    "section_document",
    "parse_manifest_with_deprecations",
]


def parse_manifest(
    data: Any, *, source: str | None = None, locate: Any = None, strict: bool = False
) -> TrainingManifest:
    """Validate a manifest document; a :class:`SpecError` lists every problem at once.

    AgileRL's old spellings of keys (:data:`agilerl.models.legacy.LEGACY_KEYS`) are read
    under their new names, each with a :class:`~agilerl.models.legacy.LegacyKeyWarning`;
    ``strict`` refuses them instead."""
    manifest, deprecated = parse_manifest_with_deprecations(
        data, source=source, locate=locate, strict=strict
    )
    for issue in deprecated:
        warnings.warn(issue.format(source), LegacyKeyWarning, stacklevel=2)
    return manifest


def parse_manifest_with_deprecations(
    data: Any, *, source: str | None = None, locate: Any = None, strict: bool = False
) -> tuple[TrainingManifest, list[Issue]]:
    """:func:`parse_manifest` that returns the old spellings it read (one located issue
    each) instead of warning: for callers that report them themselves (the CLI)."""
    if not isinstance(data, dict):
        issue = Issue(
            (), data, "a manifest is a mapping with algorithm and environment sections", (1, 1)
        )
        raise SpecError("TrainingManifest", [issue], source)
    normalised = normalise_legacy_keys(data, locate)
    refused = normalised.conflicts
    if strict:
        refused = refused + [
            dataclasses.replace(issue, message=f"{issue.message} (strict: old names are refused)")
            for issue in normalised.deprecated
        ]
    try:
        manifest = parse_spec(TrainingManifest, normalised.data, source=source, locate=locate)
    except SpecError as err:
        found = [normalised.located(issue, locate) for issue in err.issues]
        raise SpecError("TrainingManifest", refused + found, source) from None
    if refused:
        raise SpecError("TrainingManifest", refused, source)
    return manifest, [] if strict else normalised.deprecated


def manifest_rule_issues(sections: Mapping[str, Any]) -> list[Issue]:
    """What the manifest's own rules (its ``x-agilerl-rules``: PPO's ``num_envs`` written
    twice, a recurrent PPO's ``network.simba``, ...) find in ``sections``, a manifest's
    sections by name, each a spec or a document, e.g. a run put together in Python
    without a manifest. A spec counts the fields it was given (``model_fields_set``), as
    a document counts the keys it holds."""
    defaults = {name: field.default for name, field in TrainingManifest.model_fields.items()}
    return [
        Issue(violation.path, violation.value, violation.message)
        for check in compile_rules(TrainingManifest.spec_rules, defaults)
        for violation in check(sections.get)
    ]


def load_manifest(path: str | Path, *, strict: bool = False) -> TrainingManifest:
    """Load and validate a manifest file (YAML 1.2 dialect of :mod:`agilerl.files.documents`);
    old spellings of keys warn (or, ``strict``, are refused) as in :func:`parse_manifest`."""
    from agilerl.files.documents import load_document

    data, locate = load_document(path)
    manifest, deprecated = parse_manifest_with_deprecations(
        data, source=str(path), locate=locate, strict=strict
    )
    for issue in deprecated:
        warnings.warn(issue.format(str(path)), LegacyKeyWarning, stacklevel=2)
    return manifest


def algorithm_document(algorithm: Any) -> dict[str, Any]:
    """The algorithm section with every field, ``name`` first, except a field the
    manifest's ``sameAs`` rules say repeats another section (PPO's ``num_envs`` is the
    environment's) where the manifest did not write it: its default would contradict
    that section."""
    doc = {"name": algorithm.name, **algorithm.model_dump(mode="json")}
    for key in repeated_algorithm_fields() - algorithm.model_fields_set:
        doc.pop(key, None)
    return doc


def repeated_algorithm_fields() -> frozenset[str]:
    """Algorithm fields another section decides (the manifest's ``sameAs`` rules)."""
    return frozenset(
        rule["key"]
        for rule in TrainingManifest.spec_rules
        if rule.get("field") == "algorithm" and "sameAs" in rule
    )


def section_document(value: Any, section: str) -> dict[str, Any]:
    """A section given as a spec or a mapping, as a document (a spec without its unset
    optional values, as a manifest would leave them out)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{section}: expected a spec or a mapping, got {type(value).__name__}")


def manifest_document(
    algorithm: Any,
    environment: Any,
    training: Any = None,
    *,
    network: Any = None,
    mutation: Any = None,
    replay_buffer: Any = None,
    selection_strategy: Any = None,
    version: int | None = None,
) -> dict[str, Any]:
    """The manifest document of a run given as sections, each a spec or a mapping
    (None: left out), not yet validated: what ``LocalTrainer.to_manifest`` and
    ``TrainingManifest.from_trainer_specs`` write. The algorithm's ``hp_config`` is left
    out: a run derives it from ``mutation.rl_hp_selection``."""
    doc: dict[str, Any] = {} if version is None else {"version": version}
    if isinstance(algorithm, BaseModel):
        doc["algorithm"] = algorithm_document(algorithm)
    else:
        doc["algorithm"] = section_document(algorithm, "algorithm")
    doc["algorithm"].pop("hp_config", None)
    sections = {
        "environment": environment,
        "network": network,
        "training": training,
        "mutation": mutation,
        "replay_buffer": replay_buffer,
        "selection_strategy": selection_strategy,
    }
    for section, value in sections.items():
        if value is not None:
            doc[section] = section_document(value, section)
    return doc


def dump_manifest(manifest: TrainingManifest) -> dict[str, Any]:
    """The manifest as a schema-valid document: ``name`` first in the algorithm section,
    unset optional sections left out, so load -> dump -> load gives the same specs."""
    data = manifest.model_dump(mode="json", exclude_unset=True, exclude={"algorithm"})
    data["algorithm"] = algorithm_document(manifest.algorithm)
    order = [
        "version",
        "algorithm",
        "environment",
        "network",
        "training",
        "mutation",
        "replay_buffer",
        "selection_strategy",
    ]
    return {key: data[key] for key in order if key in data}
