"""An algorithm class bound to its spec: the schema states each hyperparameter once.

``class DQN(RLAlgorithm, spec=DQNSpec)`` names the generated spec class (from
``schemas/dqn.schema.json``) once; everything the constructor used to restate is derived
from it here:

* the hyperparameters (:func:`hyperparameter_names`, the class's ``init_args``): the spec's
  fields, ``hp_config`` aside (the mutation ranges, not a hyperparameter);
* the constructor's signature (:func:`bound_signature`): the class's own positional and
  keyword arguments with every spec field as a keyword-only argument carrying the schema's
  default, so ``inspect.signature(DQN)`` and ``help(DQN)`` show the real defaults;
* validation (:func:`bind_hyperparameters`): an unknown keyword is a TypeError, as Python
  says it; a value outside the schema's type or bounds a ValueError naming the call and
  the bound (``DQN(lr=-1.0): must be >= 0``); each value reaches the algorithm as the
  Python type its field declares (``int``, ``float``, ``bool``), as the hand-written
  checks converted them;
* mutation limits: read from the bound spec class itself
  (:meth:`~agilerl.algorithms.core.evolvable.EvolvableAlgorithm._within_limits`).

Fields the engine types more richly than a number (a nested config such as PPO's
``rollout_buffer_config``, LLM's ``lora_config``) reach the algorithm as given: it turns
them into its own objects, and the manifest validated them against the schema already.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Union

import numpy as np
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from agilerl.models.limits import Limits

#: Spec fields that are not hyperparameters of the agent: ``hp_config`` is the ranges its
#: hyperparameters mutate in, a constructor argument of its own.
NOT_HYPERPARAMETERS = frozenset({"hp_config"})

_MISSING: Any = inspect.Parameter.empty


def hyperparameter_names(spec: type[BaseModel]) -> tuple[str, ...]:
    """The hyperparameters a spec states, in the schema's order."""
    return tuple(name for name in spec.model_fields if name not in NOT_HYPERPARAMETERS)


def field_default(field: FieldInfo) -> Any:
    """The schema's default of a field (a fresh object for a mutable one), or
    ``inspect.Parameter.empty`` for a field the schema requires."""
    if field.is_required():
        return _MISSING
    return field.get_default(call_default_factory=True)


def _resolved(annotation: Any, metadata: list[Any]) -> tuple[Any, bool, list[Any]]:
    """``(type, nullable, constraints)`` of a field: ``Optional``, ``Annotated`` and the
    generated type aliases (``MaxGradNorm = TypeAliasType(...)``) unwrapped."""
    nullable = False
    constraints = list(metadata)
    for _ in range(8):  # aliases nest a few levels at most
        value = getattr(annotation, "__value__", None)  # a TypeAliasType
        if value is not None:
            annotation = value
            continue
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *extra = typing.get_args(annotation)
            for item in extra:
                constraints.extend(item.metadata if isinstance(item, FieldInfo) else [item])
            continue
        if origin in (Union, types.UnionType):
            parts = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(parts) < len(typing.get_args(annotation)):
                nullable = True
                if len(parts) == 1:
                    annotation = parts[0]
                    continue
                # Several types besides null (LLM's ``quantization``: a preset or a
                # mapping): the algorithm's to convert, as any other rich type.
                annotation = Union[tuple(parts)]  # noqa: UP007
        break
    return annotation, nullable, constraints


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar it holds (a mutated or stacked value)."""
    return value.item() if isinstance(value, np.generic) else value


def check_value(field: FieldInfo, value: Any) -> tuple[Any, str | None]:
    """``(value as the algorithm receives it, None)``, or ``(value, why not)`` when the
    schema does not allow it. Numbers are checked against the field's bounds; booleans,
    strings and enumerations against their type and choices; anything else is the
    algorithm's to convert and passes as given."""
    kind, nullable, constraints = _resolved(field.annotation, field.metadata)
    value = _plain(value)
    if value is None:
        return (None, None) if nullable or kind is Any else (None, "must not be null")
    if kind is bool:
        return (value, None) if isinstance(value, bool) else (value, "must be a boolean")
    if kind in (int, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return value, f"must be {'an integer' if kind is int else 'a number'}"
        limits = Limits.from_field(kind, constraints) or Limits()
        if kind is int and isinstance(value, float) and not value.is_integer():
            return value, "must be an integer"
        if not limits.low <= value <= limits.high:
            return value, f"must be {' and '.join(limits.written)}"
        # A JSON Schema integer may be written 2.0; a number 1 is the float 1.0.
        return kind(value), None
    if typing.get_origin(kind) is Literal:
        choices = typing.get_args(kind)
        if value not in choices:
            return value, "must be one of " + ", ".join(repr(c) for c in choices)
        return value, None
    if kind is str:
        return (value, None) if isinstance(value, str) else (value, "must be a string")
    return value, None


def bind_hyperparameters(
    owner: str, spec: type[BaseModel], given: Mapping[str, Any], extra: Iterable[str] = ()
) -> dict[str, Any]:
    """Every hyperparameter of ``spec``: the value ``given`` holds, else the schema's
    default, each checked (:func:`check_value`). ``owner`` names the algorithm in the
    errors. A name neither a hyperparameter nor in ``extra`` is a TypeError, as Python
    reports an unexpected keyword argument; a required field left out is one too."""
    fields = spec.model_fields
    names = hyperparameter_names(spec)
    allowed = {*names, *extra}
    for name in given:
        if name not in allowed:
            raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}")
    bound: dict[str, Any] = {}
    for name in names:
        if name in given:
            value, problem = check_value(fields[name], given[name])
            if problem is not None:
                raise ValueError(f"{owner}({name}={given[name]!r}): {problem}")
        else:
            value = field_default(fields[name])
            if value is _MISSING:
                raise TypeError(f"{owner}() missing required keyword argument: {name!r}")
        bound[name] = value
    return bound


def bound_signature(cls: type, spec: type[BaseModel]) -> inspect.Signature:
    """The signature a spec-bound class's constructor shows: the positional arguments
    of its ``__init__``, the spec's hyperparameters (keyword-only, schema defaults), then
    the keyword-only arguments its ``__init__`` and its bases' take besides (``hp_config``,
    ``net_config``, ``device``, ...). A ``**kwargs`` a constructor passes on is not shown:
    what it takes is listed."""
    positional: list[inspect.Parameter] = []
    keywords: dict[str, inspect.Parameter] = {}
    inits = [k.__dict__["__init__"] for k in cls.__mro__ if "__init__" in k.__dict__]
    for depth, init in enumerate(inits):
        if init is object.__init__:
            continue
        params = list(inspect.signature(init).parameters.values())[1:]  # self
        for p in params:
            if p.kind is inspect.Parameter.KEYWORD_ONLY:
                keywords.setdefault(p.name, p)
            elif depth == 0 and p.kind in (
                inspect.Parameter.POSITIONAL_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            ):
                positional.append(p)
    fields = spec.model_fields
    hyper = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=field_default(fields[name]),
            annotation=fields[name].annotation,
        )
        for name in hyperparameter_names(spec)
    ]
    shown = {p.name for p in (*positional, *hyper)}
    rest = [p for name, p in keywords.items() if name not in shown]
    return inspect.Signature([*positional, *hyper, *rest])
