"""Validating a spec document in one pass, as the JSON Schema would.

pydantic-core validates a whole document in Rust, nested specs included, as long as no
spec has a Python validator of its own. What the schema says that pydantic cannot is
done here, once, in one walk over the document before it is handed over:

* an integral float (``8.0``) becomes an int in integer fields (JSON Schema counts it
  as an integer; strict pydantic does not);
* a spec whose parts depend on each other (the manifest) prepares its document
  through its ``prepare_document`` hook (choosing the algorithm, environment and
  network sections);
* the ``x-agilerl-rules`` of every spec in the document are checked on the raw values
  (absent fields take their defaults), so rule errors come with the field errors;
* a non-finite number (``inf``, ``nan``) inside an open map is refused: JSON has none,
  so such a document is not valid for the schema (typed float fields refuse them
  through ``allow_inf_nan=False``).

The walk knows, for each spec class, which fields can hold nested specs (through
lists, maps, optional and tagged unions): a :class:`Shape` per field, computed once per
class from its annotations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, cast, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from agilerl.models.rules import (
    Acceptance,
    Check,
    acceptance_lines,
    compile_acceptance,
    compile_rules,
    compile_test,
    rule_operands,
)

try:  # Python >= 3.10: `X | Y` unions
    from types import UnionType
except ImportError:  # pragma: no cover
    UnionType = Union  # type: ignore[misc,assignment]

if TYPE_CHECKING:
    from typing_extensions import LiteralString  # typing's from Python 3.11

_MISSING = object()


@dataclass(frozen=True)
class Shape:
    """Where specs (or free-form values) can sit inside one field's value."""

    #: Spec classes a mapping here is validated as, and the tag choosing between them.
    models: tuple[type[BaseModel], ...] = ()
    tag: str | None = None
    #: The shape of each item of a list / each value of a map here.
    items: Shape | None = None
    values: Shape | None = None
    #: A free-form value (``Any`` inside a map or list): JSON numbers only.
    free: bool = False

    def model_for(self, value: Mapping[str, Any]) -> type[BaseModel] | None:
        if len(self.models) == 1:
            return self.models[0]
        if self.tag is not None:
            wanted = value.get(self.tag, _MISSING)
            for model in self.models:
                if wanted in get_args(model.model_fields[self.tag].annotation):
                    return model
            return None  # pydantic reports the missing or unknown tag
        # An untagged union (the schema's anyOf, e.g. the manifest's selection_strategy):
        # its rules apply in the branch the value is, as they do for a JSON Schema
        # validator; the branch is the one spec whose keys and constants admit the value.
        admitting = [model for model in self.models if _admits(model, value)]
        return admitting[0] if len(admitting) == 1 else None


@functools.cache
def _keys_of(
    model: type[BaseModel],
) -> tuple[frozenset[str] | None, tuple[tuple[str, tuple[Any, ...]], ...]]:
    """The keys a ``model`` document may hold (None: any, where it allows extra keys; its
    old spellings count), and the constants (``Literal`` fields) it fixes."""
    fields = model.model_fields
    keys = None
    if model.model_config.get("extra") == "forbid":
        keys = frozenset(fields) | frozenset(getattr(model, "spec_renamed", {}))
    constants = tuple(
        (name, get_args(info.annotation))
        for name, info in fields.items()
        if get_origin(info.annotation) is Literal
    )
    return keys, constants


def _admits(model: type[BaseModel], value: Mapping[str, Any]) -> bool:
    """Whether ``value`` may be a ``model`` document as far as its keys and constants go."""
    keys, constants = _keys_of(model)
    if keys is not None and not keys.issuperset(value):
        return False
    return all(value[name] in allowed for name, allowed in constants if name in value)


_FREE = Shape(free=True)


def _merge(shapes: list[Shape], tag: str | None) -> Shape | None:
    models = tuple(model for shape in shapes for model in shape.models)
    items = next((shape.items for shape in shapes if shape.items is not None), None)
    values = next((shape.values for shape in shapes if shape.values is not None), None)
    if not models and items is None and values is None:
        return None
    return Shape(models=models, tag=tag if len(models) > 1 else None, items=items, values=values)


def shape_of(annotation: Any, tag: str | None = None) -> Shape | None:
    """The :class:`Shape` of values of ``annotation``; None when nothing in it needs walking."""
    alias = getattr(annotation, "__value__", None)  # a TypeAliasType
    if alias is not None:
        return shape_of(alias, tag)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return shape_of(args[0], tag)
    if origin in (Union, UnionType):
        return _merge([s for s in map(shape_of, args) if s is not None], tag)
    if origin in (list, set, frozenset, tuple):
        items = [_FREE if arg is Any else shape_of(arg) for arg in args if arg is not Ellipsis]
        merged = next((s for s in items if s is not None), None)
        return Shape(items=merged) if merged is not None else None
    if origin is dict:
        values = _FREE if args[1] is Any else shape_of(args[1])
        return Shape(values=values) if values is not None else None
    if origin is Literal or not isinstance(annotation, type):
        return None
    if issubclass(annotation, BaseModel):
        return Shape(models=(annotation,))
    return None


def _is_integer_typed(annotation: Any) -> bool:
    leaves = _leaf_types(annotation)
    return int in leaves and not leaves & {float, Any, object}


def _leaf_types(annotation: Any) -> set[Any]:
    """The scalar types an annotation admits (through aliases, Annotated, unions, lists)."""
    value = getattr(annotation, "__value__", None)  # a TypeAliasType
    if value is not None:
        return _leaf_types(value)
    if get_origin(annotation) is Literal:
        return {object}  # literal values are compared as they are
    args = get_args(annotation)
    if get_origin(annotation) is Annotated:
        return _leaf_types(args[0])
    if args:
        return set().union(*map(_leaf_types, args))
    return {annotation}


def _has_integral_float(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (float, list)) and _has_integral_float(item):
                return True
    return False


def _integral_floats_to_int(value: Any) -> Any:
    """JSON Schema counts 8.0 as an integer; pydantic strict mode does not. Agree with
    the schema by handing an integer field (or a list of them) the integer."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_integral_floats_to_int(item) for item in value]
    return value


#: A rule's check, the fields it reads, and whether it passes on the defaults alone (then
#: a rule none of whose fields is given is skipped).
RulePlan = tuple[Check, frozenset[str], bool]


@dataclass(frozen=True)
class Plan:
    """What the walk does for one spec class."""

    integer_fields: tuple[str, ...]
    nested: tuple[tuple[str, Shape], ...]
    rules: tuple[RulePlan, ...]
    #: Whether the class prepares its own document (``prepare_document`` overridden).
    has_hook: bool
    #: All of ``rules`` at once: True when none is broken (then none is checked one by one).
    accepts: Acceptance
    #: The nested fields below which some rule or free-form value is checked.
    checked: tuple[tuple[str, Shape], ...] = ()

    @property
    def has_checks(self) -> bool:
        """Whether a document of this class ever needs the rules walk."""
        return bool(self.rules or self.checked)


_PLANS: dict[type, Plan] = {}


def _defaults(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {name: getattr(info, "default", None) for name, info in fields.items()}


def _rule_checks(
    rules: tuple[Mapping[str, Any], ...], fields: Mapping[str, Any]
) -> tuple[RulePlan, ...]:
    """Each rule compiled with the fields' defaults, and the fields it reads."""
    defaults = _defaults(fields)
    checks = []
    for rule, check in zip(rules, compile_rules(rules, defaults), strict=True):
        operands = frozenset(rule_operands(rule) & fields.keys())
        passes_on_defaults = not check({}.get)
        checks.append((check, operands, passes_on_defaults))
    return tuple(checks)


def plan_of(cls: Any) -> Plan:
    """The walk's plan for ``cls``, computed once its annotations are resolved."""
    plan = _PLANS.get(cls)
    if plan is None:
        cls.__pydantic_validator__  # noqa: B018  (builds a deferred class, resolving its fields)
        fields = cls.model_fields
        nested = []
        for name, info in fields.items():
            shape = shape_of(info.annotation, getattr(info, "discriminator", None))
            if shape is not None:
                nested.append((name, shape))
        plan = _PLANS[cls] = Plan(
            integer_fields=tuple(n for n, f in fields.items() if _is_integer_typed(f.annotation)),
            nested=tuple(nested),
            rules=_rule_checks(cls.spec_rules, fields),
            has_hook=cls.prepares_document,
            accepts=compile_acceptance(cls.spec_rules, _defaults(fields)),
            checked=tuple((name, shape) for name, shape in nested if _has_checks(shape)),
        )
    return plan


def _has_checks(shape: Shape | None) -> bool:
    if shape is None:
        return False
    if shape.free or any(plan_of(model).has_checks for model in shape.models):
        return True
    return _has_checks(shape.items) or _has_checks(shape.values)


def _relocated(errors: list[InitErrorDetails], loc: tuple[Any, ...]) -> list[InitErrorDetails]:
    if loc:
        for item in errors:
            item["loc"] = (*loc, *item.get("loc", ()))
    return errors


class Walk:
    """One walk over a document: the prepared document and what was found on the way.

    ``hook_errors`` come from ``prepare_document`` hooks (whole sections validated on
    their own); ``rule_errors`` from rules and non-finite numbers.
    """

    def __init__(self) -> None:
        self.hook_errors: list[InitErrorDetails] = []
        self.rule_errors: list[InitErrorDetails] = []

    def spec(self, cls: Any, data: dict[str, Any], loc: tuple[Any, ...]) -> dict[str, Any]:
        """``data`` prepared as a ``cls`` document (a new dict when anything changed)."""
        plan = _PLANS.get(cls) or plan_of(cls)
        original = data
        for name in plan.integer_fields:
            value = data.get(name)
            if isinstance(value, (float, list)) and _has_integral_float(value):
                if data is original:
                    data = dict(data)
                data[name] = _integral_floats_to_int(value)
        if plan.has_hook:
            data, hook_errors = cls.prepare_document(data)
            if hook_errors:
                self.hook_errors += _relocated(hook_errors, loc)
        for name, shape in plan.nested:
            value = data.get(name, _MISSING)
            if value is _MISSING:
                continue
            walked = self.value(shape, value, (*loc, name))
            if walked is not value:
                if data is original:
                    data = dict(data)
                data[name] = walked
        if plan.rules:
            _check_rules(plan, data, loc, self.rule_errors)
        return data

    def value(self, shape: Shape, value: Any, loc: tuple[Any, ...]) -> Any:
        if shape.free:
            _finite(value, loc, self.rule_errors)
            return value
        if isinstance(value, dict):
            if shape.models:
                model = shape.model_for(value)
                if model is None:
                    return value
                if shape.tag is not None:  # located like pydantic's own union errors
                    return self.spec(model, value, (*loc, value[shape.tag]))
                return self.spec(model, value, loc)
            if shape.values is not None:
                return self._each(shape.values, value, loc)
        elif isinstance(value, list) and shape.items is not None:
            return self._each(shape.items, value, loc)
        return value  # an instance (validated when made) or a type error pydantic reports

    def _each(self, shape: Shape, container: Any, loc: tuple[Any, ...]) -> Any:
        pairs = container.items() if isinstance(container, dict) else enumerate(container)
        changed = None
        for key, item in pairs:
            walked = self.value(shape, item, (*loc, key))
            if walked is not item:
                if changed is None:
                    changed = dict(container) if isinstance(container, dict) else list(container)
                changed[key] = walked
        return container if changed is None else changed


def _check_rules(
    plan: Plan, data: dict[str, Any], loc: tuple[Any, ...], errors: list[InitErrorDetails]
) -> None:
    if plan.accepts(data):
        return  # no rule is broken (the usual case): nothing to report
    get = data.get  # the checks hold the defaults of what they read
    for check, operands, passes_on_defaults in plan.rules:
        if passes_on_defaults and operands.isdisjoint(data):
            continue  # every operand takes its default, which passes
        violations = check(get)
        if not violations:
            continue
        for v in violations:
            errors.append(
                InitErrorDetails(
                    type=custom_error("cross_field", v.message),
                    loc=(*loc, *v.path),
                    input=v.value,
                )
            )


def _finite(value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]) -> None:
    """Refuse inf and nan anywhere in a free-form value (JSON has neither)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.append(InitErrorDetails(type="finite_number", loc=loc, input=value))
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite(item, (*loc, key), errors)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _finite(item, (*loc, index), errors)


# A document pydantic-core accepted as it is needs no preparing: only its rules and
# free-form values are left to check. That happens on every valid document, so each
# class gets a checker made once, a closure over exactly the fields that hold something
# to check (None when nothing does).

#: ``checker(value, loc, errors)``: appends the rule / non-finite errors of ``value``.
Checker = Callable[[Any, tuple[Any, ...], list[InitErrorDetails]], None]

_CHECKERS: dict[type, Checker | None] = {}


def accepted_checker(cls: Any) -> Checker | None:
    """The checker of a ``cls`` document pydantic-core accepted; None: nothing to check."""
    if cls in _CHECKERS:
        return _CHECKERS[cls]
    plan = plan_of(cls)
    specs, others = [], []  # fields holding one spec (checked directly), other fields
    for name, shape in plan.checked:
        model = _only_model(shape)
        if model is not None:
            if (check := accepted_checker(model)) is not None:
                specs.append((name, check))
        elif (check := _value_checker(shape)) is not None:
            others.append((name, check))
    checker: Checker | None = None
    if not (specs or others):
        if plan.rules:  # rules only: no frame of our own around them
            checker = functools.partial(_check_rules, plan)
    else:
        spec_fields, other_fields = tuple(specs), tuple(others)

        def check_fields(data: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]) -> None:
            for name, check in spec_fields:
                value = data.get(name)
                if isinstance(value, dict):  # else an instance (validated when made) or null
                    check(value, (*loc, name), errors)
            for name, check in other_fields:
                value = data.get(name, _MISSING)
                if value is not _MISSING:
                    check(value, (*loc, name), errors)
            if plan.rules:
                _check_rules(plan, data, loc, errors)

        checker = check_fields
    _CHECKERS[cls] = checker
    return checker


def _only_model(shape: Shape) -> type[BaseModel] | None:
    """The spec class of a shape that is one spec and nothing else (no tag, no list)."""
    if len(shape.models) == 1 and shape.items is None and not shape.free:
        return shape.models[0]
    return None


def _value_checker(shape: Shape) -> Checker | None:
    """What :func:`accepted_checker` does for a value of ``shape`` (see ``Walk.value``)."""
    if shape.free:
        return _finite
    model = _only_model(shape)
    if model is not None:
        inner = accepted_checker(model)
        if inner is None:
            return None

        def check_spec(value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]) -> None:
            if isinstance(value, dict):
                inner(value, loc, errors)

        return check_spec
    on_dict: Checker | None = None
    if shape.models:
        checkers = {model: accepted_checker(model) for model in shape.models}
        if any(checkers.values()):

            def check_member(
                value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]
            ) -> None:
                member = shape.model_for(value)
                check = checkers.get(member) if member is not None else None
                if check is not None:
                    if shape.tag is not None:  # located like pydantic's own union errors
                        loc = (*loc, value[shape.tag])
                    check(value, loc, errors)

            on_dict = check_member

    elif shape.values is not None:
        value_model = _only_model(shape.values)
        if value_model is not None:  # a map of specs (the common case): each checked directly
            each = accepted_checker(value_model)
            if each is not None:

                def check_specs(
                    value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]
                ) -> None:
                    for key, item in value.items():
                        if isinstance(item, dict):
                            each(item, (*loc, key), errors)

                on_dict = check_specs

        elif (each := _value_checker(shape.values)) is not None:

            def check_values(
                value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]
            ) -> None:
                for key, item in value.items():
                    each(item, (*loc, key), errors)

            on_dict = check_values

    on_list = _value_checker(shape.items) if shape.items is not None else None
    if on_dict is None and on_list is None:
        return None

    def check(value: Any, loc: tuple[Any, ...], errors: list[InitErrorDetails]) -> None:
        if isinstance(value, dict):
            if on_dict is not None:
                on_dict(value, loc, errors)
        elif isinstance(value, list) and on_list is not None:
            for index, item in enumerate(value):
                on_list(item, (*loc, index), errors)

    return check


# The checkers above say what is wrong; most documents have nothing wrong, and saying
# so is cheaper: each class also gets a test, made once, that answers True only where
# its checker would find nothing (its rules all at once, see ``compile_acceptance``), so
# the checker runs only on a document that may break a rule.

#: ``holds(value)``: True only when the checker of ``value`` would append nothing.
Holds = Callable[[Any], bool]

_HOLDS: dict[type, Holds | None] = {}


def accepted_holds(cls: Any) -> Holds | None:
    """The test of a ``cls`` document pydantic-core accepted; None where
    :func:`accepted_checker` is (nothing to check).

    One generated function per class: the rules of the class and of the specs nested in
    it (directly or as the values of a map) inline, other nested values (lists, tagged
    unions, free-form values) through their own tests."""
    if cls in _HOLDS:
        return _HOLDS[cls]
    constants: dict[str, Any] = {"_MISSING": _MISSING}
    lines = _holds_lines(cls, "instance", constants, 0)
    holds = compile_test(lines, constants) if lines else None
    _HOLDS[cls] = holds
    return holds


def _holds_lines(cls: Any, name: str, constants: dict[str, Any], depth: int) -> list[str]:
    """The lines testing the ``cls`` document held in variable ``name`` (as
    :func:`accepted_checker` checks it: nested specs first, then the class's rules)."""
    plan = plan_of(cls)
    lines: list[str] = []
    value, item = f"v{depth}", f"i{depth}"
    for field, shape in plan.checked:
        model = _only_model(shape)
        value_model = (
            _only_model(shape.values)
            if shape.values is not None and not (shape.models or shape.free)
            else None
        )
        if model is not None:
            inner = _holds_lines(model, value, constants, depth + 1)
            if inner:
                lines.append(f"{value} = {name}.get({field!r})")
                lines.append(f"if isinstance({value}, dict):")
                lines += [f"    {line}" for line in inner]
        elif value_model is not None and shape.items is None:  # a map of specs
            inner = _holds_lines(value_model, item, constants, depth + 1)
            if inner:
                lines.append(f"{value} = {name}.get({field!r})")
                lines.append(f"if isinstance({value}, dict):")
                lines.append(f"    for {item} in {value}.values():")
                lines.append(f"        if isinstance({item}, dict):")
                lines += [f"            {line}" for line in inner]
        elif (test := _value_holds(shape)) is not None:
            key = f"_t{len(constants)}"
            constants[key] = test
            lines.append(f"{value} = {name}.get({field!r}, _MISSING)")
            lines.append(f"if {value} is not _MISSING and not {key}({value}): return False")
    if plan.rules:
        lines += acceptance_lines(cls.spec_rules, _defaults(cls.model_fields), name, constants)
    return lines


def _value_holds(shape: Shape) -> Holds | None:
    """The test of a value of ``shape``: True only where :func:`_value_checker` finds
    nothing."""
    if shape.free:
        return _all_finite
    model = _only_model(shape)
    if model is not None:
        inner = accepted_holds(model)
        if inner is None:
            return None
        return lambda value: not isinstance(value, dict) or inner(value)
    on_dict: Holds | None = None
    if shape.models:
        tests = {model: accepted_holds(model) for model in shape.models}
        if any(tests.values()):

            def member_holds(value: Any) -> bool:
                member = shape.model_for(value)
                test = tests.get(member) if member is not None else None
                return test is None or test(value)

            on_dict = member_holds

    elif shape.values is not None:
        value_model = _only_model(shape.values)
        if value_model is not None:  # a map of specs (the common case): each tested directly
            if (spec_test := accepted_holds(value_model)) is not None:

                def specs_hold(value: Any) -> bool:
                    for item in value.values():
                        if isinstance(item, dict) and not spec_test(item):
                            return False
                    return True

                on_dict = specs_hold

        elif (each := _value_holds(shape.values)) is not None:

            def values_hold(value: Any) -> bool:
                for item in value.values():
                    if not each(item):
                        return False
                return True

            on_dict = values_hold

    on_list = _value_holds(shape.items) if shape.items is not None else None
    if on_dict is None and on_list is None:
        return None

    def holds(value: Any) -> bool:
        if isinstance(value, dict):
            return on_dict is None or on_dict(value)
        if isinstance(value, list) and on_list is not None:
            for item in value:
                if not on_list(item):
                    return False
        return True

    return holds


def _all_finite(value: Any) -> bool:
    """Whether :func:`_finite` finds nothing in ``value``."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        value = value.values()
    elif not isinstance(value, (list, tuple)):
        return True
    for item in value:
        if not _all_finite(item):
            return False
    return True


_BUILTIN_ERROR_TYPES = frozenset(get_args(ErrorType))


def custom_error(kind: str, message: str) -> PydanticCustomError:
    """An error of our own kind whose message is already written out.

    pydantic-core's stubs ask for ``LiteralString`` (guarding a template it fills from
    ``ctx``); these errors carry no ``ctx``, so a message built at run time is shown as
    written, and the casts only tell the checker so.
    """
    return PydanticCustomError(cast("LiteralString", kind), cast("LiteralString", message))


def reraisable(item: ErrorDetails) -> InitErrorDetails:
    """A reported error as raisable details, keeping its type and context intact."""
    if item["type"] in _BUILTIN_ERROR_TYPES:
        details = InitErrorDetails(type=item["type"], loc=item["loc"], input=item["input"])
        if "ctx" in item:
            details["ctx"] = item["ctx"]
        return details
    # Our own (cross_field, manifest) errors from nested specs: same type, same message.
    return InitErrorDetails(
        type=custom_error(item["type"], item["msg"]), loc=item["loc"], input=item["input"]
    )


def validate_document(cls: Any, data: dict[str, Any], **options: Any) -> Any:
    """Validate ``data`` as ``cls`` in one pass; one ValidationError lists every problem.

    ``options`` go to pydantic-core's ``validate_python`` (``self_instance`` from
    ``__init__``, ``context``, ...).

    Most documents are valid as written, so pydantic-core sees the document first (after
    the class's own hook): if it accepts it, no integer field held a float (strict mode
    refuses one), so nothing needed converting, and only rules and free-form values are
    left to check. Otherwise the full walk prepares the document and every problem is
    collected, exactly as if the first attempt had not been made.
    """
    validator = cls.__pydantic_validator__
    plan = _PLANS.get(cls) or plan_of(cls)
    if plan.has_hook and not options:
        result = cls.validate_at_once(data)
        if result is not None:
            return result
    hooked, hook_errors = cls.prepare_document(data) if plan.has_hook else (data, None)
    if not hook_errors:
        try:
            result = validator.validate_python(hooked, **options)
        except ValidationError:
            pass  # reported by the full walk below
        else:
            holds = _HOLDS[cls] if cls in _HOLDS else accepted_holds(cls)
            if holds is None or holds(hooked):
                return result
            check = _CHECKERS[cls] if cls in _CHECKERS else accepted_checker(cls)
            # accepted_holds is None exactly where accepted_checker is (checked above)
            assert check is not None
            rule_errors: list[InitErrorDetails] = []
            check(hooked, (), rule_errors)
            if not rule_errors:
                return result
            raise ValidationError.from_exception_data(cls.__name__, rule_errors)
    walk = Walk()
    prepared = walk.spec(cls, data, ())
    field_errors: list[InitErrorDetails] = []
    result = None
    try:
        result = validator.validate_python(prepared, **options)
    except ValidationError as error:
        field_errors = [reraisable(item) for item in error.errors(include_url=False)]
    if walk.hook_errors or field_errors or walk.rule_errors:
        errors = walk.hook_errors + field_errors + walk.rule_errors
        raise ValidationError.from_exception_data(cls.__name__, errors)
    return result
