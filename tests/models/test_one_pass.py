"""A manifest valid as written is validated in one pydantic-core call.

``validate_in_one_call`` (agilerl.models.manifest_base) is tried before the general path
(``prepare_document``, section by section, then the walk). It may only answer for a
document the general path accepts, with the same manifest; for anything else it answers
None and the general path decides and reports. Checked here on every manifest of the
repository (valid and invalid), then on the cases it leaves to the general path.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict
from support import ROOT

from agilerl.files.documents import load_document
from agilerl.models import TrainingManifest, dump_manifest, parse_manifest
from agilerl.models.core_schemas import typed_sections
from agilerl.models.legacy import normalise_legacy_keys
from agilerl.models.manifest_base import validate_in_one_call
from agilerl.models.validation import SpecError

MANIFESTS = sorted(
    [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "tests").glob("*manifest*/**/*.yaml")]
)

BASE = {
    "algorithm": {"name": "DQN", "batch_size": 64},
    "environment": {"name": "CartPole-v1", "num_envs": 2},
    "network": {
        "latent_dim": 32,
        "encoder_config": {"hidden_size": [64]},
        "head_config": {"hidden_size": [64]},
    },
    "training": {"max_steps": 1000, "evo_steps": 100},
    "mutation": {"rl_hp_selection": {"lr": {"min": 0.0001, "max": 0.01}}},
    "replay_buffer": {"max_size": 1000},
}


#: A network whose encoder is a CNN (its arch left to the caller).
CNN_NETWORK = {
    "encoder_config": {"channel_size": [16], "kernel_size": [3], "stride_size": [1]},
    "head_config": {"hidden_size": [64]},
}


def general(data: Any, monkeypatch: pytest.MonkeyPatch) -> TrainingManifest:
    """``parse_manifest`` with the one-call path turned off."""
    with monkeypatch.context() as patch:
        patch.setattr(TrainingManifest, "validate_at_once", classmethod(lambda cls, doc: None))
        return parse_manifest(data)


def assert_same(quick: TrainingManifest, expected: TrainingManifest) -> None:
    assert quick == expected
    assert dump_manifest(quick) == dump_manifest(expected)  # what was set, at every depth
    assert quick.model_fields_set == expected.model_fields_set
    for section in ("algorithm", "environment", "network"):
        assert type(getattr(quick, section)) is type(getattr(expected, section))


def with_(path: str, value: Any) -> dict[str, Any]:
    """BASE with ``value`` at the dotted ``path`` (None removes the key)."""
    import copy

    doc = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return doc


def test_the_corpus_is_there():
    assert len(MANIFESTS) > 50


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_one_call_decides_as_the_general_path(path, monkeypatch):
    try:
        data, _ = load_document(path)
    except SpecError:
        pytest.skip("not a loadable document")
    if not isinstance(data, dict):
        pytest.skip("not a mapping")
    # what the loader validates: AgileRL's old spellings of keys read as the new ones
    # (a document still holding one is not valid as written: the general path reads it)
    data = normalise_legacy_keys(data).data
    quick = validate_in_one_call(TrainingManifest, data)
    try:
        expected = general(data, monkeypatch)
    except SpecError:
        assert quick is None  # never a manifest for a document the general path refuses
        return
    assert quick is not None  # a valid manifest as written takes the one call
    assert_same(quick, expected)


@pytest.mark.parametrize(
    "doc",
    [
        BASE,
        with_("network.arch", "mlp"),
        with_("network.encoder_config.arch", "mlp"),
        with_("network.arch", "cnn") | {"network": {**CNN_NETWORK, "arch": "cnn"}},
        with_("network.encoder_config", CNN_NETWORK["encoder_config"]),
        with_("network", None),
        {**BASE, "network": None},
        with_("algorithm", {"name": "PPO", "num_envs": 2}),
        with_("algorithm", {"name": "PPO"})
        | {"network": {**BASE["network"], "squash_output": True}},
    ],
    ids=[
        "base",
        "top-arch",
        "inner-arch",
        "top-cnn",
        "inferred-cnn",
        "no-network",
        "null-network",
        "ppo",
        "squash",
    ],
)
def test_valid_variants_take_one_call(doc, monkeypatch):
    quick = validate_in_one_call(TrainingManifest, doc)
    assert quick is not None
    assert_same(quick, general(doc, monkeypatch))
    assert_same(parse_manifest(doc), quick)


@pytest.mark.parametrize(
    ("doc", "at"),
    [
        (with_("algorithm.batch_size", 64.0), None),  # converted by the walk: valid
        (with_("training.max_steps", 1e3), None),
        (with_("algorithm.batch_size", "64"), "algorithm.batch_size"),
        (with_("algorithm.name", "DQM"), "algorithm.name"),
        (with_("algorithm.name", ["DQN"]), "algorithm.name"),
        (with_("environment", ["CartPole-v1"]), "environment"),
        (with_("network.arch", ["mlp"]), "network.arch"),
        (with_("network.encoder_config.arch", ["mlp"]), "network.encoder_config.arch"),
        (with_("network", "big"), "network"),
        (with_("network.squash_output", True), "network.squash_output"),
        (with_("network.encoder_config", 3), "network.encoder_config"),
        (with_("network.arch", "cnn"), "network.encoder_config"),
        (with_("network.encoder_config.arch", "lstm"), "network.encoder_config"),
        (with_("network.encoder_config.min_mlp_nodes", 128), "network.encoder_config"),
        (with_("training.evo_steps", 5000), "training.evo_steps"),
        (with_("mutation.rl_hp_selection.lr", {"min": 0.1, "max": 0.01}), None),
        (with_("mutation.rl_hp_selection.gama", {"min": 0.9, "max": 0.99}), None),
        (with_("mutation.rl_hp_selection.batch_size", {"min": 0, "max": 8}), None),
        (with_("algorithm", {"name": "PPO", "num_envs": 4}), "algorithm"),
    ],
)
def test_everything_else_goes_the_general_way(doc, at, monkeypatch):
    assert validate_in_one_call(TrainingManifest, doc) is None
    try:
        expected = general(doc, monkeypatch)
    except SpecError as error:
        with pytest.raises(SpecError) as caught:
            parse_manifest(doc)
        assert str(caught.value) == str(error)  # same problems, same words, same places
        if at is not None:
            assert any(issue.dotted_path.startswith(at) for issue in error.issues), error
    else:
        assert_same(parse_manifest(doc), expected)


def test_integral_floats_are_converted_as_before():
    manifest = parse_manifest(with_("algorithm.batch_size", 64.0))
    assert manifest.algorithm.batch_size == 64 and type(manifest.algorithm.batch_size) is int


def test_object_defaults_are_fresh_each_time():
    first, second = parse_manifest(BASE), parse_manifest(BASE)
    assert first.replay_buffer.n_step_buffer_args == second.replay_buffer.n_step_buffer_args
    assert first.replay_buffer.n_step_buffer_args is not second.replay_buffer.n_step_buffer_args


class _Inner(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    n: int = 1


class _Outer(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    section: Any = None
    tags: dict[str, int] = {"a": 1}
    items: list[int] = [1, 2]


def test_typed_sections_type_a_field_and_leave_the_class_alone():
    validator = typed_sections(_Outer, {"section": (_Inner, True)})
    typed = validator.validate_python({"section": {"n": 2}})
    assert type(typed) is _Outer and typed.section == _Inner(n=2)
    assert typed.model_fields_set == {"section"}
    assert validator.validate_python({}).section is None
    with pytest.raises(ValueError):
        validator.validate_python({"section": {"m": 2}})
    assert _Outer.__pydantic_complete__
    assert _Outer.model_validate({"section": {"m": 2}}).section == {"m": 2}  # still Any


def test_typed_sections_copy_object_defaults():
    validator = typed_sections(_Outer, {"section": (_Inner, True)})
    first, second = validator.validate_python({}), validator.validate_python({})
    assert first.tags == {"a": 1} and first.items == [1, 2]
    first.tags["b"] = 2
    first.items.append(3)
    assert second.tags == {"a": 1} and second.items == [1, 2]
    assert validator.validate_python({}).tags == {"a": 1}
    assert _Outer().tags == {"a": 1}


def test_typed_sections_take_a_second_document_alongside():
    validator = typed_sections(_Outer, {"section": (_Inner, True)}, (_Inner,))
    outer, inner = validator.validate_python(({}, {"n": 3}))
    assert type(outer) is _Outer and inner == _Inner(n=3)


def test_every_spec_is_tested_where_it_is_checked():
    from agilerl.models.base import SPEC_CLASSES
    from agilerl.models.one_pass import accepted_checker, accepted_holds

    for cls in SPEC_CLASSES.values():
        assert (accepted_holds(cls) is None) == (accepted_checker(cls) is None), cls.__name__


def test_every_algorithm_has_a_one_call_validator():
    from agilerl.models.manifest_base import ENCODER_SPECS, _one_call
    from agilerl.models.registry import ALGO_REGISTRY

    for name in ALGO_REGISTRY:
        for arch in (None, "", *ENCODER_SPECS):
            _one_call(TrainingManifest, ALGO_REGISTRY.get(name).spec_cls, arch)
    assert TrainingManifest.__pydantic_complete__


def test_an_old_spelling_is_left_to_the_general_path():
    """AgileRL's ``memory_size`` is no field: the one call refuses the document as
    written, and the general path reads it as ``max_size`` (SpecBase.prepare_document)."""
    doc = with_("replay_buffer", {"memory_size": 1000})
    assert validate_in_one_call(TrainingManifest, doc) is None
    assert TrainingManifest.model_validate(doc).replay_buffer.max_size == 1000
