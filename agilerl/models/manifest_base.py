"""Behaviour of the generated ``TrainingManifest``: the sections that depend on others.

Mirrors the manifest schema's ``oneOf`` on ``algorithm.name`` and its ``if``/``then``
rules: the algorithm section is validated by the registered spec of its ``name``, the
environment by the spec of the algorithm's agent type, the network by the algorithm's
kind (with the encoder's ``arch`` given at the top, inside ``encoder_config``, or left
to inference), the ranges of ``mutation.rl_hp_selection`` by the algorithm's
hyperparameters, and the algorithm's values by the manifest's own bounds. Every error
is reported at its place in the document, all at once.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError, SchemaValidator

from agilerl.models.base import AlgorithmBase, SpecBase, reraisable, spec_class
from agilerl.models.core_schemas import typed_sections
from agilerl.models.kinds import AGENT_KINDS, AgentKind
from agilerl.models.limits import manifest_ceilings, manifest_limits
from agilerl.models.one_pass import Holds, accepted_holds, custom_error, validate_document
from agilerl.models.registry import ALGO_REGISTRY

#: Encoder spec (title) per ``arch``, in the order of the schema's EncoderConfig union.
ENCODER_SPECS = {
    "mlp": "MlpSpec",
    "cnn": "CnnSpec",
    "lstm": "LstmSpec",
    "multiinput": "MultiInputSpec",
    "simba": "SimbaSpec",
}


def network_arch_of(network: object) -> tuple[str | None, str]:
    """The encoder ``arch`` a network section names and where: ``"network.arch"``,
    ``"network.encoder_config.arch"``, or ``(None, "inferred")`` when it names none (the
    observation space decides when the run is built). ``network`` is a document or a
    network section spec."""

    def get(value: object, key: str) -> Any:  # a document's value: any JSON
        return value.get(key) if isinstance(value, Mapping) else getattr(value, key, None)

    if network is None:
        return None, "inferred"
    arch = get(network, "arch")
    if arch:
        return arch, "network.arch"
    inner = get(get(network, "encoder_config"), "arch")
    return (inner, "network.encoder_config.arch") if inner else (None, "inferred")


def _error(
    loc: tuple[Any, ...], value: Any, message: str, kind: str = "manifest"
) -> InitErrorDetails:
    return InitErrorDetails(type=custom_error(kind, message), loc=loc, input=value)


def _validate(cls: type, data: Any, loc: tuple[Any, ...]) -> tuple[Any, list[InitErrorDetails]]:
    """Validate ``data`` as ``cls``; errors come back located under ``loc``."""
    try:
        return validate_document(cls, data), []
    except ValidationError as error:
        errors = [reraisable(item) for item in error.errors(include_url=False)]
        for item in errors:
            item["loc"] = (*loc, *item.get("loc", ()))
        return None, errors


def kind_of(algorithm_cls: type[AlgorithmBase]) -> AgentKind:
    """The row of :data:`~agilerl.models.kinds.AGENT_KINDS` an algorithm belongs to."""
    return AGENT_KINDS[algorithm_cls.agent_type]  # type: ignore[index]


def environment_spec_for(algorithm_cls: type[AlgorithmBase]) -> type:
    """The environment spec class an algorithm trains in."""
    return spec_class(kind_of(algorithm_cls).environment_spec(algorithm_cls.env_type))


def network_section_for(algorithm_cls: type[AlgorithmBase]) -> type:
    """The spec class of an algorithm's ``network`` section in a manifest."""
    return spec_class(kind_of(algorithm_cls).network_section)


def algorithm_class(raw: object) -> tuple[type[AlgorithmBase] | None, list[InitErrorDetails]]:
    """The registered spec class an algorithm section names."""
    if not isinstance(raw, dict):
        return None, []  # reported as a type error
    name = raw.get("name")
    found = ALGO_REGISTRY.spec_class(name)
    if found is not None:
        return found, []
    known = ", ".join(ALGO_REGISTRY.names())
    if name is None:
        return None, [
            _error(
                ("algorithm", "name"),
                raw,
                f"required: the algorithm's name, one of {known}",
                "missing",
            )
        ]
    return None, [_error(("algorithm", "name"), name, ALGO_REGISTRY.not_registered(name))]


def resolve_network(
    algorithm_cls: type[AlgorithmBase], raw: Any
) -> tuple[Any, list[InitErrorDetails]]:
    if raw is None or not isinstance(raw, dict):
        return raw, []  # the generated field reports a non-object
    section, errors = _validate(network_section_for(algorithm_cls), raw, ("network",))
    if not kind_of(algorithm_cls).encoder:
        return section, errors  # nothing in it depends on anything else
    if "squash_output" in raw and algorithm_cls.network_spec_name != "StochasticActorSpec":
        errors.append(
            _error(
                ("network", "squash_output"),
                raw["squash_output"],
                f"unknown key: {algorithm_cls.__name__.removesuffix('Spec')} builds a "
                f"{algorithm_cls.network_spec_name}; only stochastic actors squash outputs",
                "not_for_this_algorithm",
            )
        )
    if "encoder_config" in raw:
        errors += _expect_object(("network", "encoder_config"), raw["encoder_config"])
    errors += _check_encoder(raw.get("arch"), raw.get("encoder_config"))
    return section, errors


def _check_encoder(arch: Any, encoder: Any) -> list[InitErrorDetails]:
    """The encoder config against the encoder its ``arch`` (given or inferable) selects."""
    if not isinstance(encoder, dict) or (arch is not None and not _known_arch(arch)):
        return []  # a non-object encoder or an unknown top-level arch is already reported
    loc = ("network", "encoder_config")
    inner = encoder.get("arch")
    if arch is not None and inner is not None and inner != arch:
        return [_error((*loc, "arch"), inner, f"conflicts with network.arch {arch!r}")]
    chosen = arch or inner
    if chosen is not None:
        if not _known_arch(chosen):
            known = ", ".join(repr(a) for a in ENCODER_SPECS)
            return [_error((*loc, "arch"), chosen, f"unknown encoder architecture; known: {known}")]
        return _validate(spec_class(ENCODER_SPECS[chosen]), {**encoder, "arch": chosen}, loc)[1]
    # No arch anywhere: it is inferred from the observation space when the run is built,
    # so the config must be a complete config of some encoder (the schema's anyOf).
    attempts = {}
    for a, title in ENCODER_SPECS.items():
        attempts[a] = _validate(spec_class(title), encoder, loc)[1]
        if not attempts[a]:
            return []  # a complete config of this encoder: no need to try the others
    closest = min(attempts, key=lambda a: len(attempts[a]))
    return [
        _error(
            loc,
            encoder,
            f"without an arch, encoder_config must be a complete config of some encoder; "
            f"closest is {closest!r}, which reports: {attempts[closest][0]['loc'][-1]}: "
            f"{_message(attempts[closest][0])}",
        )
    ]


def _known_arch(arch: object) -> bool:
    return isinstance(arch, str) and arch in ENCODER_SPECS  # a document's arch may be a list


def check_ranges(algorithm_cls: type[AlgorithmBase], mutation: object) -> list[InitErrorDetails]:
    """``mutation.rl_hp_selection`` against the algorithm (the schema's per-algorithm
    ``if``/``then`` clauses): every name is a numeric hyperparameter of it, and ``min``
    and ``max`` are values that hyperparameter accepts, so no mutation can leave them."""
    selection = mutation.get("rl_hp_selection") if isinstance(mutation, dict) else None
    if not isinstance(selection, dict):
        return []  # absent, or a type error the mutation spec reports
    limits = manifest_limits(algorithm_cls)
    loc = ("mutation", "rl_hp_selection")
    errors = []
    for name, bounds in selection.items():
        limit = limits.get(name)
        if limit is None:
            close = difflib.get_close_matches(str(name), limits, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(
                _error(
                    (*loc, name),
                    bounds,
                    f"unknown key: {_algorithm_name(algorithm_cls)} has no numeric "
                    f"hyperparameter {name!r}{hint}; mutable: {', '.join(limits)}",
                    "unknown_hyperparameter",
                )
            )
            continue
        if not isinstance(bounds, dict):
            continue  # a type error the mutation spec reports
        for key in ("min", "max"):
            value = bounds.get(key)
            if type(value) is not int and type(value) is not float:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue  # missing or not a number: the mutation spec reports it
            elif limit.low <= value <= limit.high and (type(value) is int or not limit.integer):
                continue  # within the limits (the usual case, decided without a call)
            problem = limit.problem(value)
            if problem:
                errors.append(
                    _error(
                        (*loc, name, key),
                        value,
                        f"{_algorithm_name(algorithm_cls)}.{name} {problem}",
                        "range",
                    )
                )
    return errors


def check_ceilings(fields: Mapping[str, object]) -> list[InitErrorDetails]:
    """The algorithm section's values against the manifest's own bounds, which the spec
    class leaves open (:func:`~agilerl.models.limits.manifest_ceilings`: what no machine
    runs); reported as a bound of the field's own is, and as ajv reports the schema's."""
    errors = []
    for name, ceiling in manifest_ceilings().items():
        value = fields.get(name)
        if (type(value) is int or type(value) is float) and value > ceiling:
            errors.append(
                InitErrorDetails(
                    type="less_than_equal",
                    loc=("algorithm", name),
                    input=value,
                    ctx={"le": ceiling},
                )
            )
    return errors


def _algorithm_name(algorithm_cls: type[AlgorithmBase]) -> str:
    return algorithm_cls.__name__.removesuffix("Spec")


def _message(details: InitErrorDetails) -> str:
    kind = details["type"]
    return kind.message_template if isinstance(kind, PydanticCustomError) else str(kind)


def _expect_object(
    loc: tuple[Any, ...], value: Any, nullable: bool = False
) -> list[InitErrorDetails]:
    if isinstance(value, dict) or (nullable and value is None):
        return []
    expected = "an object or null" if nullable else "an object"
    return [_error(loc, value, f"Input should be {expected}", "dict_type")]


# A valid manifest in one call. ``prepare_document`` validates the sections that depend
# on the algorithm one by one, so that every problem is found at its place; most
# manifests have none, and for them one pydantic-core validator per algorithm, with those
# sections typed (agilerl.models.core_schemas), does the same work at once. What the
# validator cannot check (rules, the encoder, the mutation ranges) is checked after it,
# on the same values. Any problem, or anything prepare_document would have changed (an
# integral float in an integer field), sends the document down the general path, which
# finds and reports it as it always has: this path decides nothing on its own.


@dataclass(frozen=True)
class _OneCall:
    """What a manifest of one algorithm (and encoder) is validated with in one call."""

    validator: SchemaValidator
    #: The tests of the sections' rules and free-form values (None: nothing to check).
    algorithm_holds: Holds | None
    environment_holds: Holds | None
    network_holds: Holds | None
    manifest_holds: Holds | None


#: By manifest class, algorithm class and encoder (``arch``: the one the encoder config
#: is checked against, ``""`` for whichever it fits, None where there is none to check).
_ONE_CALL: dict[tuple[type, type, str | None], _OneCall] = {}


def _one_call(manifest_cls: type, algorithm_cls: type[AlgorithmBase], arch: str | None) -> _OneCall:
    found = _ONE_CALL.get((manifest_cls, algorithm_cls, arch))
    if found is None:
        sections = {
            "algorithm": (algorithm_cls, False),
            "environment": (environment_spec_for(algorithm_cls), False),
            "network": (network_section_for(algorithm_cls), True),
        }
        if arch is None:
            encoders = ()
        else:
            titles = list(ENCODER_SPECS.values()) if arch == "" else [ENCODER_SPECS[arch]]
            encoders = tuple(spec_class(title) for title in titles)
        found = _ONE_CALL[(manifest_cls, algorithm_cls, arch)] = _OneCall(
            typed_sections(manifest_cls, sections, encoders),
            algorithm_holds=accepted_holds(sections["algorithm"][0]),
            environment_holds=accepted_holds(sections["environment"][0]),
            network_holds=accepted_holds(sections["network"][0]),
            manifest_holds=accepted_holds(manifest_cls),
        )
    return found


_REFUSED = object()


def _encoder_document(network: dict[str, Any]) -> Any:
    """The encoder config as :func:`_check_encoder` validates it, and the ``arch`` it is
    validated for (``""``: whichever encoder it fits); ``(None, None)`` without one, and
    ``_REFUSED`` for one that function or the network section refuses as it stands."""
    if "encoder_config" not in network:
        return None, None
    encoder = network["encoder_config"]
    if not isinstance(encoder, dict):
        return _REFUSED
    arch, inner = network.get("arch"), encoder.get("arch")
    if arch is not None and inner is not None and inner != arch:
        return _REFUSED
    chosen = inner if arch is None else arch
    if chosen is None:
        return "", encoder
    if not _known_arch(chosen):
        return _REFUSED
    return chosen, encoder if inner == chosen else {**encoder, "arch": chosen}


def validate_in_one_call(manifest_cls: type, data: dict[str, Any]) -> Any:
    """The manifest ``data`` describes when it is valid as written; None when it is not
    (or holds anything ``prepare_document`` would change), for the general path."""
    algorithm, environment = data.get("algorithm"), data.get("environment")
    if not (isinstance(algorithm, dict) and isinstance(environment, dict)):
        return None
    algorithm_cls = ALGO_REGISTRY.spec_class(algorithm.get("name"))
    if algorithm_cls is None:
        return None
    network = data.get("network")
    arch = encoder = None
    if network is not None:
        if not isinstance(network, dict):
            return None
        if kind_of(algorithm_cls).encoder:
            if (
                "squash_output" in network
                and algorithm_cls.network_spec_name != "StochasticActorSpec"
            ):
                return None
            found = _encoder_document(network)
            if found is _REFUSED:
                return None
            arch, encoder = found
    one_call = _ONE_CALL.get((manifest_cls, algorithm_cls, arch)) or _one_call(
        manifest_cls, algorithm_cls, arch
    )
    fields = dict(algorithm)
    del fields["name"]
    document = {**data, "algorithm": fields}
    try:
        if arch is None:
            manifest = one_call.validator.validate_python(document)
            encoder_spec = None  # no encoder config to check
        else:
            manifest, encoder_spec = one_call.validator.validate_python((document, encoder))
    except ValidationError:
        return None
    if arch is not None and not _holds(accepted_holds(type(encoder_spec)), encoder):
        return None
    if (
        not (
            _holds(one_call.algorithm_holds, fields)
            and _holds(one_call.environment_holds, environment)
            and (network is None or _holds(one_call.network_holds, network))
            and _holds(one_call.manifest_holds, data)
        )
        or check_ranges(algorithm_cls, data.get("mutation"))
        or check_ceilings(fields)
    ):
        return None
    return manifest


def _holds(test: Holds | None, value: object) -> bool:
    return test is None or test(value)


#: ``get_validated``'s ``mode`` -> what it returns of the validated manifest.
VALIDATED_FORMS: dict[str, Callable[[Any], Any]] = {
    "json": lambda manifest: _manifest_module().dump_manifest(manifest),
    "python": lambda manifest: manifest,
}

_NOT_GIVEN: Any = object()


def _manifest_module() -> Any:
    # agilerl.models.manifest imports the generated manifest, which imports this module.
    import agilerl.models.manifest

    return agilerl.models.manifest


class ManifestBase(SpecBase):
    """Behaviour of ``TrainingManifest``: resolves the sections that depend on others."""

    @classmethod
    def get_validated(
        cls, manifest: str | os.PathLike[str] | Mapping[str, Any], *, mode: str = "json"
    ) -> Any:
        """A manifest validated: ``manifest`` is a file's path (YAML or JSON) or a
        document. ``mode="json"`` gives the document (:func:`dump_manifest`: unset
        optional sections left out), ``"python"`` the :class:`TrainingManifest`.

        Every problem, an unknown key included, is reported at once at its dotted path
        by a :class:`~agilerl.models.validation.SpecError` (a ValueError), as
        ``agilerl validate`` reports it.
        """
        form = VALIDATED_FORMS.get(mode)
        if form is None:
            raise ValueError(f"mode: {mode!r}; expected one of {', '.join(VALIDATED_FORMS)}")
        module = _manifest_module()
        if isinstance(manifest, (str, os.PathLike)):
            return form(module.load_manifest(manifest))
        if isinstance(manifest, Mapping):
            return form(module.parse_manifest(dict(manifest)))
        raise TypeError(
            f"manifest: expected a file path or a mapping, got {type(manifest).__name__}"
        )

    @classmethod
    def from_trainer_specs(
        cls,
        *,
        algorithm: Any,
        environment: Any,
        training: Any,
        mutation: Any = None,
        replay_buffer: Any = None,
        selection_strategy: Any = None,
        network: Any = None,
        **kwargs: Any,
    ) -> Any:
        """The validated manifest of a run given as specs (or mappings) section by
        section, as ``LocalTrainer(...).to_manifest()`` writes one before training.

        ``tournament_selection=`` is AgileRL's old name of ``selection_strategy``
        (DeprecationWarning; giving both with different values is a ValueError); any
        other keyword is a TypeError. A section the manifest refuses is a
        :class:`~agilerl.models.validation.SpecError` at its dotted path.
        """
        tournament = kwargs.pop("tournament_selection", _NOT_GIVEN)
        if kwargs:
            raise TypeError(
                "from_trainer_specs() got unexpected keyword argument(s): "
                f"{', '.join(sorted(kwargs))}"
            )
        module = _manifest_module()
        if tournament is not _NOT_GIVEN:
            warnings.warn(
                "from_trainer_specs(tournament_selection=...) is deprecated: "
                "use selection_strategy=",
                DeprecationWarning,
                stacklevel=2,
            )
        both = tournament is not _NOT_GIVEN and None not in (tournament, selection_strategy)
        if selection_strategy is None and tournament is not _NOT_GIVEN:
            selection_strategy = tournament
        document = module.manifest_document(
            algorithm,
            environment,
            training,
            network=network,
            mutation=mutation,
            replay_buffer=replay_buffer,
            selection_strategy=selection_strategy,
        )
        manifest = module.parse_manifest(document)
        if both:  # the same section twice: equal once validated (defaults filled in)
            old = module.section_document(tournament, "tournament_selection")
            if module.parse_manifest({**document, "selection_strategy": old}) != manifest:
                raise ValueError(
                    "selection_strategy and tournament_selection differ; give "
                    "selection_strategy only (tournament_selection is its old name)"
                )
        return manifest

    @property
    def tournament_selection(self) -> Any:
        """Deprecated (AgileRL's name): the selection section when it is tournament
        selection, else None. Read ``selection_strategy``."""
        warnings.warn(
            "TrainingManifest.tournament_selection is deprecated: read selection_strategy",
            DeprecationWarning,
            stacklevel=2,
        )
        selection = getattr(self, "selection_strategy", None)
        return selection if getattr(selection, "strategy", None) == "tournament" else None

    @property
    def network_arch(self) -> tuple[str | None, str]:
        """The encoder architecture and where it was chosen: ``"network.arch"``,
        ``"network.encoder_config.arch"``, or ``"inferred"`` (from the observation
        space when the run is built; the trainer records what it picked)."""
        return network_arch_of(getattr(self, "network", None))

    @classmethod
    def section_class(cls, path: tuple[Any, ...], document: Any) -> type | None:
        """The spec class of the object at ``path`` of ``document`` when it depends on
        another part of the document (the sections, the encoder); None otherwise."""
        algorithm = document.get("algorithm") if isinstance(document, dict) else None
        name = algorithm.get("name") if isinstance(algorithm, dict) else None
        algorithm_cls = ALGO_REGISTRY.spec_class(name)
        if algorithm_cls is None:
            return None
        if path == ("algorithm",):
            return algorithm_cls
        if path == ("environment",):
            return environment_spec_for(algorithm_cls)
        if path == ("network",):
            return network_section_for(algorithm_cls)
        if path == ("network", "encoder_config") and kind_of(algorithm_cls).encoder:
            network = document.get("network")
            if not isinstance(network, dict):
                return None
            encoder = network.get("encoder_config")
            arch = network.get("arch") or (
                encoder.get("arch") if isinstance(encoder, dict) else None
            )
            return (
                spec_class(ENCODER_SPECS[arch])
                if isinstance(arch, str) and arch in ENCODER_SPECS
                else None
            )
        return None

    @classmethod
    def validate_at_once(cls, data: dict[str, Any]) -> Any:
        return validate_in_one_call(cls, data)

    @classmethod
    def prepare_document(
        cls, data: dict[str, Any]
    ) -> tuple[dict[str, Any], list[InitErrorDetails]]:
        data, errors = super().prepare_document(data)  # the old spellings of top-level keys
        data = dict(data)
        for key, nullable in (("algorithm", False), ("environment", False), ("network", True)):
            if key in data:
                errors += _expect_object((key,), data[key], nullable)
        algorithm_cls, class_errors = algorithm_class(data.get("algorithm"))
        errors += class_errors
        if algorithm_cls is None:
            return data, errors
        # The algorithm's class decides the other sections even when its fields are wrong.
        fields = {key: value for key, value in data["algorithm"].items() if key != "name"}
        algorithm, algorithm_errors = _validate(algorithm_cls, fields, ("algorithm",))
        errors += algorithm_errors + check_ceilings(fields)
        if algorithm is not None:
            data["algorithm"] = algorithm
        if isinstance(data.get("environment"), dict):
            env_cls = environment_spec_for(algorithm_cls)
            env, env_errors = _validate(env_cls, data["environment"], ("environment",))
            errors += env_errors
            data["environment"] = env if env is not None else data["environment"]
        network, network_errors = resolve_network(algorithm_cls, data.get("network"))
        errors += network_errors
        if network is not None and not network_errors:
            data["network"] = network
        errors += check_ranges(algorithm_cls, data.get("mutation"))
        return data, errors
