"""Parity of ``agilerl.models`` with its documented API (``tests/data/seeds/*.txt``).

The seed files are parsed by ``tests/support/seed_docs.py``; nothing here restates their
content, so the checks follow the seeds wherever they go. Every check is its own
parametrized test whose id names the class, field or member it covers, e.g.
``test_field_default[MlpSpec.hidden_size]``; the pytest summary line counts them.
"""

from __future__ import annotations

import importlib
import inspect
import os
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from support import ROOT
from support.seed_docs import (
    BOUND_KEYS,
    MISSING,
    SEED_FILES,
    SEEDS_DIR,
    DocField,
    DocMember,
    load_seed_docs,
    render_types,
)
from typing_extensions import TypeAliasType

DOCS = load_seed_docs()
CLASSES = {doc.name: doc for doc in DOCS.classes}
MODEL_CLASSES = [doc for doc in DOCS.classes if doc.fields is not None]
FIELDS = DOCS.fields
MEMBERS = [m for m in DOCS.members if m.kind != "config"]
CONFIGS = [m for m in DOCS.members if m.kind == "config" and m.config]


def _shared_seeds_dir() -> Path | None:
    """The canonical seeds (``shared/seeds``), when this checkout can see them."""
    candidates = [
        os.environ.get("AGILERL_SHARED_SEEDS"),
        ROOT / "shared" / "seeds",
        ROOT.parent / "shared" / "seeds",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def resolve(path: str) -> Any:
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def model_class(owner: str) -> type[BaseModel]:
    return resolve(CLASSES[owner].path)


def code_field(doc: DocField) -> FieldInfo:
    fields = model_class(doc.owner).model_fields
    if doc.name not in fields:
        pytest.fail(f"{doc.id}: documented field is missing from the code")
    return fields[doc.name]


def same_value(a: Any, b: Any) -> bool:
    """Equal and of the same type (``1`` is not ``1.0``, ``True`` is not ``1``)."""
    return type(a) is type(b) and a == b


def show(value: Any) -> str:
    return "<required>" if value is MISSING else f"{value!r} ({type(value).__name__})"


# --------------------------------------------------------------- code-side facts


def _metadata_bounds(obj: Any, prefix: str) -> set[tuple[str, Any]]:
    """Constraints one metadata object contributes (FieldInfo, annotated_types, ...)."""
    if isinstance(obj, FieldInfo):
        found: set[tuple[str, Any]] = set()
        for item in obj.metadata:
            found |= _metadata_bounds(item, prefix)
        return found
    if isinstance(obj, annotated_types.GroupedMetadata) and not isinstance(
        obj, annotated_types.BaseMetadata
    ):
        found = set()
        for item in obj:
            found |= _metadata_bounds(item, prefix)
        return found
    values = {key: getattr(obj, key, None) for key in BOUND_KEYS}
    found = {(prefix + key, value) for key, value in values.items() if value is not None}
    if found:
        return found
    # Unknown metadata: surface it rather than silently ignoring a constraint.
    return {(prefix + "metadata", repr(obj))}


class CodeFacts:
    """Bounds, literals, nullability and type text of an implemented annotation."""

    def __init__(self, annotation: Any, metadata: list[Any]) -> None:
        self.bounds: set[tuple[str, Any]] = set()
        self.literals: set[Any] | None = None
        self.nullable = False
        for item in metadata:
            self.bounds |= _metadata_bounds(item, "")
        self.types = render_types(self._walk(annotation, ""))

    def _walk(self, tp: Any, prefix: str) -> set[str]:
        if isinstance(tp, TypeAliasType):
            return self._walk(tp.__value__, prefix)
        origin = get_origin(tp)
        if origin is typing.Annotated:
            inner, *metadata = get_args(tp)
            for item in metadata:
                self.bounds |= _metadata_bounds(item, prefix)
            return self._walk(inner, prefix)
        if origin in (Union, types.UnionType):
            return set().union(*(self._walk(arg, prefix) for arg in get_args(tp)))
        if tp is None or tp is type(None):
            if not prefix:
                self.nullable = True
            return {"None"}
        if tp is Any:
            if not prefix:
                self.nullable = True
            return {"Any"}
        if origin is Literal:
            if not prefix:
                self.literals = (self.literals or set()) | set(get_args(tp))
            return {"Literal"}
        if origin is not None:
            args = [render_types(self._walk(arg, "item.")) for arg in get_args(tp)]
            name = getattr(origin, "__name__", repr(origin))
            return {f"{name}[{', '.join(args)}]"} if args else {name}
        if isinstance(tp, type):
            return {tp.__name__}
        return {repr(tp)}


def code_facts(info: FieldInfo) -> CodeFacts:
    return CodeFacts(info.annotation, list(info.metadata))


# -------------------------------------------------------------------- the seeds


@pytest.mark.parametrize("name", SEED_FILES)
def test_seed_copy_identical(name: str) -> None:
    shared = _shared_seeds_dir()
    if shared is None:
        pytest.skip("shared/seeds is not available in this checkout")
    assert (SEEDS_DIR / name).read_bytes() == (shared / name).read_bytes(), (
        f"tests/data/seeds/{name} differs from {shared / name}"
    )


def test_parsed_counts() -> None:
    """A parser regression that finds nothing must not pass as 'no mismatches'."""
    per_file = {name: [c for c in DOCS.classes if c.source_file == name] for name in SEED_FILES}
    assert all(per_file.values()), {k: len(v) for k, v in per_file.items()}
    assert len(DOCS.classes) >= 18, len(DOCS.classes)
    assert len(MODEL_CLASSES) >= 17, len(MODEL_CLASSES)
    assert len(FIELDS) >= 120, len(FIELDS)
    assert len(MEMBERS) >= 10, len(MEMBERS)
    assert len(CONFIGS) >= 4, len(CONFIGS)
    assert len(DOCS.data) >= 1, DOCS.data
    assert sum(1 for f in FIELDS if f.bounds) >= 60
    assert sum(1 for f in FIELDS if f.literals) >= 5
    assert sum(1 for f in FIELDS if f.required) >= 10
    assert sum(1 for m in MEMBERS if m.from_parameters_block) >= 2


# ---------------------------------------------------------------------- classes


@pytest.mark.parametrize("doc", DOCS.classes, ids=lambda d: d.name)
def test_class_exists(doc) -> None:
    cls = resolve(doc.path)
    assert inspect.isclass(cls), f"{doc.path} is {cls!r}, not a class"
    if doc.fields is not None:
        assert issubclass(cls, BaseModel), f"{doc.path} is not a pydantic model"


@pytest.mark.parametrize("doc", MODEL_CLASSES, ids=lambda d: d.name)
def test_field_set(doc) -> None:
    documented = [f.name for f in doc.fields]
    implemented = list(resolve(doc.path).model_fields)
    missing = [n for n in documented if n not in implemented]
    extra = [n for n in implemented if n not in documented]
    assert not missing and not extra, (
        f"{doc.name}: documented but missing {missing}; implemented but undocumented {extra}"
    )


# ----------------------------------------------------------------------- fields


def _field_ids(doc: DocField) -> str:
    return doc.id


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_required(doc: DocField) -> None:
    info = code_field(doc)
    assert info.is_required() == doc.required, (
        f"{doc.id}: seed says {'required' if doc.required else 'optional'}, "
        f"code says {'required' if info.is_required() else 'optional'}"
    )


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_default(doc: DocField) -> None:
    info = code_field(doc)
    code = MISSING if info.is_required() else info.get_default(call_default_factory=True)
    if doc.default is MISSING or code is MISSING:
        assert doc.default is code, f"{doc.id}: seed {show(doc.default)}, code {show(code)}"
        return
    assert same_value(code, doc.default), f"{doc.id}: seed {show(doc.default)}, code {show(code)}"


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_bounds(doc: DocField) -> None:
    implemented = code_facts(code_field(doc)).bounds
    assert implemented == set(doc.bounds), (
        f"{doc.id}: seed {sorted(doc.bounds, key=repr)} ({doc.annotation}), "
        f"code {sorted(implemented, key=repr)}"
    )


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_literals(doc: DocField) -> None:
    implemented = code_facts(code_field(doc)).literals
    documented = None if doc.literals is None else set(doc.literals)
    assert implemented == documented, f"{doc.id}: seed {documented}, code {implemented}"


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_nullable(doc: DocField) -> None:
    implemented = code_facts(code_field(doc)).nullable
    assert implemented == doc.nullable, (
        f"{doc.id}: seed {'allows' if doc.nullable else 'forbids'} None ({doc.annotation}), "
        f"code {'allows' if implemented else 'forbids'} it"
    )


@pytest.mark.parametrize("doc", FIELDS, ids=_field_ids)
def test_field_type(doc: DocField) -> None:
    """Member types of the annotation, constraints and Literal values aside."""
    info = code_field(doc)
    implemented = code_facts(info).types
    assert implemented == doc.types, (
        f"{doc.id}: seed {doc.types!r} ({doc.annotation}), code {implemented!r} "
        f"({info.annotation!r})"
    )


# ---------------------------------------------------------------------- members


#: Documented methods this project extends, on purpose, with keyword-only parameters
#: after the documented ones (every documented call still works unchanged); the docs
#: list them in docs/differences.md.
EXTENSIONS = {
    "RLAlgorithmSpec.build_algorithm": ("net_config", "seed"),
    "MultiAgentRLAlgorithmSpec.build_algorithm": ("net_config", "seed"),
}


def _compare_params(member: DocMember, code: list[inspect.Parameter]) -> list[str]:
    problems: list[str] = []
    documented_names = [p.name for p in member.params]
    extra = EXTENSIONS.get(f"{member.owner}.{member.name}", ())
    if extra:
        tail = code[len(code) - len(extra) :]
        if [p.name for p in tail] != list(extra) or any(
            p.kind is not inspect.Parameter.KEYWORD_ONLY or p.default is not None for p in tail
        ):
            problems.append(f"extension {list(extra)}: expected keyword-only, default None, last")
        code = code[: len(code) - len(extra)]
    code_names = [p.name for p in code]
    if documented_names != code_names:
        problems.append(f"parameters: seed {documented_names}, code {code_names}")
    by_name = {p.name: p for p in code}
    for doc in member.params:
        param = by_name.get(doc.name)
        if param is None:
            continue
        code_default = MISSING if param.default is inspect.Parameter.empty else param.default
        if member.from_parameters_block:
            # Only the parameter list survived rendering: names, and "Defaults to ...".
            if doc.default is not MISSING and not same_value(code_default, doc.default):
                problems.append(
                    f"{doc.name} default: seed {show(doc.default)}, code {show(code_default)}"
                )
            continue
        if param.kind.name.lower() != doc.kind:
            problems.append(f"{doc.name} kind: seed {doc.kind}, code {param.kind.name.lower()}")
        if doc.default is MISSING or code_default is MISSING:
            if doc.default is not code_default:
                problems.append(
                    f"{doc.name} default: seed {show(doc.default)}, code {show(code_default)}"
                )
        elif not same_value(code_default, doc.default):
            problems.append(
                f"{doc.name} default: seed {show(doc.default)}, code {show(code_default)}"
            )
    return problems


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.id)
def test_member(member: DocMember) -> None:
    cls = resolve(CLASSES[member.owner].path)
    try:
        raw = inspect.getattr_static(cls, member.name)
    except AttributeError:
        pytest.fail(f"{member.id}: documented {member.kind} is missing ({member.line})")

    if member.kind == "property":
        assert isinstance(raw, property), f"{member.id}: seed has a property, code has {raw!r}"
        return
    if member.kind == "classmethod":
        assert isinstance(raw, classmethod), (
            f"{member.id}: seed documents a classmethod, code has {type(raw).__name__}"
        )
    elif member.kind == "staticmethod":
        # Documented static; a classmethod is called the same way (Spec.get_training_fn()).
        assert isinstance(raw, (staticmethod, classmethod)), (
            f"{member.id}: seed documents a staticmethod, code has {type(raw).__name__}"
        )
    else:
        assert inspect.isfunction(raw), (
            f"{member.id}: seed documents an instance method, code has {type(raw).__name__}"
        )
    func = getattr(cls, member.name)
    assert callable(func)
    if member.owner == "MlpSpec" and member.name == "model_dump":
        # Existence only: its behaviour (dropping a None output_activation) is tested
        # elsewhere, and pydantic's own keyword parameters stand in for ``**kwargs``.
        return
    # Class and static methods come bound from getattr; an instance method's first
    # parameter is ``self``, which the seeds do not show.
    params = list(inspect.signature(func).parameters.values())
    if member.kind == "method":
        params = params[1:]
    problems = _compare_params(member, params)
    assert not problems, f"{member.id} ({member.line}): " + "; ".join(problems)


@pytest.mark.parametrize("member", CONFIGS, ids=lambda m: m.owner)
def test_model_config(member: DocMember) -> None:
    config = resolve(CLASSES[member.owner].path).model_config
    missing = {k: v for k, v in member.config.items() if k not in config or config[k] != v}
    assert not missing, f"{member.owner}.model_config lacks {missing} (has {dict(config)})"


# ------------------------------------------------------------------ module data


@pytest.mark.parametrize("data", DOCS.data, ids=lambda d: d.name)
def test_module_data(data) -> None:
    obj = resolve(data.path)
    if data.type_path is not None:
        expected = resolve(data.type_path)
        assert isinstance(obj, expected), f"{data.path} is {obj!r}, not a {data.type_path}"
