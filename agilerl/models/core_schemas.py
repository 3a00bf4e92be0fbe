"""Validators assembled from the generated specs' pydantic-core schemas.

``TrainingManifest`` types the sections that depend on another one (``algorithm``,
``environment``, ``network``) as ``Any``: no static type says that ``name: DQN`` makes
the algorithm a ``DQNSpec``. Once the algorithm is known, every section's spec is, and
:func:`typed_sections` builds the validator of the manifest with those fields typed by
them: one pydantic-core call validates the whole document in Rust, instead of one call
per section with Python between them. It builds the same instances as the class's own
validator would from the sections validated one by one.

The assembled validators also hand out object defaults without ``copy.deepcopy``:
pydantic-core deep-copies an unhashable default (``n_step_buffer_args: {n_step: 3}``) on
every use, which costs more than validating it; a schema default that is a flat object
or array of scalars is copied with its own ``copy`` method instead (the same value).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import CoreSchema, SchemaValidator

_SCALARS = (str, int, float, bool, type(None))


def core_schema_of(cls: type[BaseModel]) -> CoreSchema:
    """The pydantic-core schema of ``cls``, built now if the class defers it."""
    cls.__pydantic_core_schema__["type"]  # noqa: B018  (a deferred class builds on first use)
    return cls.__pydantic_core_schema__


def _copier(default: Any) -> Callable[[], Any] | None:
    """A factory of equal fresh copies of ``default`` (a flat dict or list of scalars);
    None for anything else, left to pydantic-core's deep copy."""
    if isinstance(default, dict) and all(isinstance(v, _SCALARS) for v in default.values()):
        return default.copy
    if isinstance(default, list) and all(isinstance(v, _SCALARS) for v in default):
        return default.copy
    return None


def _copied_defaults(schema: Any) -> Any:
    """``schema`` rebuilt with its flat object defaults given by factories."""
    if isinstance(schema, list):
        return [_copied_defaults(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    rebuilt = {
        key: value if key == "default" else _copied_defaults(value) for key, value in schema.items()
    }
    if rebuilt.get("type") == "default" and "default" in rebuilt:
        factory = _copier(rebuilt["default"])
        if factory is not None:
            del rebuilt["default"]
            rebuilt["default_factory"] = factory
            rebuilt["default_factory_takes_data"] = False
    return rebuilt


def _unwrapped(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """A (shallow) copy of a schema and the definitions it refers to."""
    if schema["type"] == "definitions":
        return dict(schema["schema"]), list(schema["definitions"])
    return dict(schema), []


def typed_sections(
    cls: type[BaseModel],
    sections: Mapping[str, tuple[type[BaseModel], bool]],
    alongside: tuple[type[BaseModel], ...] = (),
) -> SchemaValidator:
    """A validator of ``cls`` whose fields named in ``sections`` (typed ``Any`` in ``cls``)
    are validated as the spec class given for each, ``None`` allowed where its flag says.
    Each such field keeps its default (a section left out stays unset).

    With ``alongside`` classes, the validator takes a pair: the ``cls`` document and
    another document, validated in the same call as the first of ``alongside`` it is valid
    for; it returns the pair of instances."""
    model, definitions = _unwrapped(core_schema_of(cls))
    fields = dict(model["schema"]["fields"])
    for name, (spec_cls, nullable) in sections.items():
        spec, spec_definitions = _unwrapped(core_schema_of(spec_cls))
        definitions += spec_definitions
        typed: dict[str, Any] = {"type": "nullable", "schema": spec} if nullable else spec
        field = dict(fields[name])
        inner = field["schema"]
        if inner["type"] == "default":
            assert inner["schema"]["type"] == "any", f"{cls.__name__}.{name} is not Any"
            field["schema"] = {**inner, "schema": typed}
        else:
            assert inner["type"] == "any", f"{cls.__name__}.{name} is not Any"
            field["schema"] = typed
        fields[name] = field
    model["schema"] = {**model["schema"], "fields": fields}
    schema: dict[str, Any] = model
    if alongside:
        choices = []
        for other in alongside:
            other_schema, other_definitions = _unwrapped(core_schema_of(other))
            definitions += other_definitions
            choices.append(other_schema)
        second = (
            choices[0]
            if len(choices) == 1
            else {"type": "union", "choices": choices, "mode": "left_to_right"}
        )
        schema = {"type": "tuple", "items_schema": [model, second]}
    if definitions:
        unique = {definition["ref"]: definition for definition in definitions}
        schema = {"type": "definitions", "schema": schema, "definitions": list(unique.values())}
    # pydantic-core reuses the validator a complete class already has for any model
    # schema of that class (how nested specs share theirs); for ``cls`` itself that
    # would ignore the typed fields, so the class reads as still being built meanwhile
    # (as it was when pydantic built its own validator).
    complete = cls.__dict__["__pydantic_complete__"]
    cls.__pydantic_complete__ = False
    try:
        return SchemaValidator(_copied_defaults(schema))
    finally:
        cls.__pydantic_complete__ = complete
